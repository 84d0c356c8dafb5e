package upgradesim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/upgradesim"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// The test world: a kubelet reports node status to a nodecontroller over
// the contract nodeinfo. Version 1.0.0 sends {node, ready} and answers
// {ok}; 2.0.0 restructures readiness into conditions and answers
// {accepted, generation}: a breaking change. The nodecontroller publishes
// each report in its topic Nodes (keyed by node), which every kubelet
// watches at its own version. An external extender, written
// against 1.0.0 and never upgraded, serves the kubelet as a pinned peer at
// /ext/report and calls the nodecontroller itself.

type StatusV1 struct {
	Node  string `json:"node"`
	Ready bool   `json:"ready"`
}

type AckV1 struct {
	OK bool `json:"ok"`
}

type Condition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

type StatusV2 struct {
	Node       string      `json:"node"`
	Conditions []Condition `json:"conditions"`
}

type AckV2 struct {
	Accepted   bool  `json:"accepted"`
	Generation int64 `json:"generation"`
}

func nodeinfo(version string, v2Schema string, idempotent bool) *framework.Contract {
	m := handshake.Contract{
		Name: "nodeinfo", Version: version, Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{"Report": {Request: "Status", Response: "Ack", Path: "report", Idempotent: idempotent}},
		Topics: map[string]handshake.Topic{"Nodes": {Object: "Status", Key: "node",
			Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete}},
	}
	if version == "1.0.0" {
		m.Schemas = map[string]json.RawMessage{
			"Status": json.RawMessage(`{"type":"object","required":["node","ready"],"properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"}}}`),
			"Ack":    json.RawMessage(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`),
		}
	} else {
		m.Schemas = map[string]json.RawMessage{
			"Status": json.RawMessage(v2Schema),
			"Ack":    json.RawMessage(`{"type":"object","required":["accepted","generation"],"properties":{"accepted":{"type":"boolean"},"generation":{"type":"integer"}}}`),
		}
	}
	return framework.MustContract(m)
}

const statusV2Schema = `{"type":"object","required":["node","conditions"],"properties":{"node":{"type":"string","minLength":1},` +
	`"conditions":{"type":"array","items":{"type":"object","required":["type","status"],"properties":{"type":{"type":"string"},"status":{"enum":["True","False","Unknown"]}}}}}}`

// contracts are a world's nodeinfo contracts and the fork between them.
type contracts struct {
	v1, v2 *framework.Contract
	// v2Changed is 2.0.0 with its messages changed and the version not
	// bumped: its fingerprint differs, so no 2.0.0 client agrees.
	v2Changed *framework.Contract
	forkV1    framework.Fork
}

func newContracts(idempotent bool) contracts {
	cs := contracts{
		v1:        nodeinfo("1.0.0", "", idempotent),
		v2:        nodeinfo("2.0.0", statusV2Schema, idempotent),
		v2Changed: nodeinfo("2.0.0", `{"type":"object","required":["node"],"properties":{"node":{"type":"string"}}}`, idempotent),
	}
	cs.forkV1 = framework.Fork{Contract: cs.v1, Methods: map[string]framework.MethodConversion{
		"Report": framework.ConvertMethod(statusDown, ackUp),
	}, Topics: map[string]framework.TopicConversion{"Nodes": framework.ConvertTopic(statusUp)}}
	return cs
}

var (
	// plainContracts declare Report not idempotent; idempotentContracts
	// declare it idempotent, so clients resend it after ambiguous failures.
	plainContracts      = newContracts(false)
	idempotentContracts = newContracts(true)
)

func statusUp(in *StatusV1) (*StatusV2, error) {
	st := "False"
	if in.Ready {
		st = "True"
	}
	return &StatusV2{Node: in.Node, Conditions: []Condition{{Type: "Ready", Status: st}}}, nil
}

func statusDown(in *StatusV2) (*StatusV1, error) {
	out := &StatusV1{Node: in.Node}
	for _, c := range in.Conditions {
		out.Ready = out.Ready || (c.Type == "Ready" && c.Status == "True")
	}
	return out, nil
}

func ackDown(in *AckV2) (*AckV1, error) { return &AckV1{OK: in.Accepted}, nil }
func ackUp(in *AckV1) (*AckV2, error)   { return &AckV2{Accepted: in.OK}, nil }

// report is the kubelet's and the extender's traffic: one Report call at
// whatever version the client speaks.
func report(ctx context.Context, c *framework.Client) error {
	switch c.Contract().Version() {
	case "1.0.0":
		ack, err := framework.CallUnary[StatusV1, AckV1](ctx, c, "Report", &StatusV1{Node: "n1", Ready: true})
		if err == nil && !ack.OK {
			err = fmt.Errorf("not ok")
		}
		return err
	default:
		ack, err := framework.CallUnary[StatusV2, AckV2](ctx, c, "Report",
			&StatusV2{Node: "n1", Conditions: []Condition{{Type: "Ready", Status: "True"}}})
		if err == nil && !ack.Accepted {
			err = fmt.Errorf("not accepted")
		}
		return err
	}
}

// world says which system to build.
type world struct {
	// fork runs the v2 components in fork mode: they keep speaking 1.0.0.
	fork bool
	// external adds the extender: a pinned 1.0.0 peer of the kubelet (in
	// fork mode) and a 1.0.0 client of the nodecontroller.
	external bool
	// nodecontrollers and kubelets are replica counts (default 1).
	nodecontrollers, kubelets int
	// brokenV2 replaces nodecontroller v2 by a deliberately broken one:
	// "any-version", "no-apply", "apply-twice", "fingerprint" or
	// "drops-updates".
	brokenV2 string
	// bound is Config.BlockedBound (default 10s); timeout the calls'
	// timeout (default 10s, and the extender's 30s: externalTimeout).
	bound, timeout time.Duration
	// rate is the kubelet's calls per second (default 40).
	rate float64
	// idempotent declares Report idempotent.
	idempotent bool
	// exactlyOnce runs the kubelets' clients with ClientConfig.ExactlyOnce:
	// every Report carries an idempotency key.
	exactlyOnce bool
}

func (w world) contracts() contracts {
	if w.idempotent {
		return idempotentContracts
	}
	return plainContracts
}

// String describes the world in a line.
func (w world) String() string {
	mode := "lockstep"
	if w.fork {
		mode = "fork mode"
	}
	s := fmt.Sprintf("%s, %d nodecontroller(s), %d kubelet(s)", mode, max(1, w.nodecontrollers), max(1, w.kubelets))
	if w.external {
		s += ", an external extender"
	}
	if w.brokenV2 != "" {
		s += ", broken nodecontroller v2: " + w.brokenV2
	}
	if w.idempotent {
		s += ", Report idempotent"
	}
	if w.exactlyOnce {
		s += ", kubelets exactly-once"
	}
	return s
}

func serverConfig(env *upgradesim.Env, release string) framework.ServerConfig {
	return env.ServerConfig(framework.ServerConfig{Release: release, SessionTTL: time.Second,
		Heartbeat: 50 * time.Millisecond, DrainTimeout: 500 * time.Millisecond})
}

// nodeKey names the node a traffic call reports: eight nodes, reported in
// turn, so the Nodes topic keeps changing.
func nodeKey(ctx context.Context) string {
	id := upgradesim.CallID(ctx)
	n, err := strconv.Atoi(strings.TrimPrefix(id, "c"))
	if err != nil {
		return "hook"
	}
	return "n" + strconv.Itoa(n%8)
}

// nodecontroller starts a real nodecontroller: v1 serves 1.0.0; v2 serves
// 2.0.0, and 1.0.0 by conversion in fork mode. apply says how many times
// its handler reports each call applied (1 when correct). It publishes each
// report in the topic Nodes, in each version's form it speaks.
func nodecontroller(cs contracts, v2, fork bool, apply int, contract *framework.Contract) func(env *upgradesim.Env) (*upgradesim.Instance, error) {
	return func(env *upgradesim.Env) (*upgradesim.Instance, error) {
		var generation atomic.Int64
		if !v2 {
			srv, err := framework.NewServer(serverConfig(env, "1.30.0"))
			if err != nil {
				return nil, err
			}
			nodes := framework.ServeTopic[StatusV1](srv, cs.v1, "Nodes")
			framework.HandleUnary(srv, cs.v1, "Report", func(ctx context.Context, st *StatusV1) (*AckV1, error) {
				if err := nodes.Set(&StatusV1{Node: nodeKey(ctx), Ready: st.Ready}); err != nil {
					return nil, err
				}
				env.Apply(ctx)
				return &AckV1{OK: st.Ready}, nil
			})
			return &upgradesim.Instance{Server: srv, Topics: map[string]upgradesim.TopicState{
				"Nodes@1.0.0": upgradesim.ViewState(nodes.TopicView)}}, nil
		}
		srv, err := framework.NewServer(serverConfig(env, "1.31.0"))
		if err != nil {
			return nil, err
		}
		nodes := framework.ServeTopic[StatusV2](srv, contract, "Nodes")
		topics := map[string]upgradesim.TopicState{"Nodes@2.0.0": upgradesim.ViewState(nodes.TopicView)}
		var oldNodes *framework.TopicWriter[StatusV1]
		if fork {
			// Fork mode publishes the topic in both forms.
			oldNodes = framework.ServeTopic[StatusV1](srv, cs.v1, "Nodes")
			topics["Nodes@1.0.0"] = upgradesim.ViewState(oldNodes.TopicView)
		}
		framework.HandleUnary(srv, contract, "Report", func(ctx context.Context, st *StatusV2) (*AckV2, error) {
			node := &StatusV2{Node: nodeKey(ctx), Conditions: st.Conditions}
			if err := nodes.Set(node); err != nil {
				return nil, err
			}
			if oldNodes != nil {
				old, _ := statusDown(node)
				if err := oldNodes.Set(old); err != nil {
					return nil, err
				}
			}
			for i := 0; i < apply; i++ {
				env.Apply(ctx)
			}
			return &AckV2{Accepted: len(st.Conditions) > 0, Generation: generation.Add(1)}, nil
		})
		if fork {
			framework.ForkUnary(srv, cs.v1, contract, "Report", statusUp, ackDown)
		}
		return &upgradesim.Instance{Server: srv, Topics: topics}, nil
	}
}

// anyVersionServer is a deliberately broken nodecontroller: a plain HTTP
// handler that welcomes every handshake at the client's own version and
// processes calls at any version path without checking sessions.
func anyVersionServer(env *upgradesim.Env) (*upgradesim.Instance, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+protocol.PathHandshake, func(w http.ResponseWriter, r *http.Request) {
		var hello handshake.Hello
		if err := json.NewDecoder(r.Body).Decode(&hello); err != nil || len(hello.Offers) == 0 {
			http.Error(w, "bad hello", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(handshake.Welcome{
			Session: "any", Version: hello.Offers[0].Version, Fingerprint: hello.Offers[0].Fingerprint,
			Peer:      handshake.Peer{Component: "nodecontroller", Instance: "fake", Release: "1.31.0"},
			Heartbeat: handshake.Duration(50 * time.Millisecond), TTL: handshake.Duration(time.Second),
		})
	})
	mux.HandleFunc("POST "+protocol.PathHeartbeat, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"lost":[],"resync":[]}`))
	})
	mux.HandleFunc("DELETE "+protocol.PathSession, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /lockstep/nodeinfo/{version}/Report", func(w http.ResponseWriter, r *http.Request) {
		env.ApplyRequest(r)
		_, _ = w.Write([]byte(`{"ok":true,"accepted":true,"generation":1}`))
	})
	mux.HandleFunc("GET /lockstep/nodeinfo/{version}/watch/Nodes", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", protocol.ContentTypeNDJSON)
		_, _ = w.Write([]byte(`{"type":"synced","instance":"fake"}` + "\n"))
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-env.Context().Done():
		}
	})
	return &upgradesim.Instance{Handler: mux}, nil
}

// droppingPublisher is a deliberately broken nodecontroller v2: it keeps
// the latest report of every node, but publishes only every other one in
// its topic, so its watchers never see its final state.
func droppingPublisher(env *upgradesim.Env) (*upgradesim.Instance, error) {
	srv, err := framework.NewServer(serverConfig(env, "1.31.0"))
	if err != nil {
		return nil, err
	}
	nodes := framework.ServeTopic[StatusV2](srv, plainContracts.v2, "Nodes")
	var mu sync.Mutex
	latest := map[string]string{}
	var n int
	framework.HandleUnary(srv, plainContracts.v2, "Report", func(ctx context.Context, st *StatusV2) (*AckV2, error) {
		node := &StatusV2{Node: nodeKey(ctx), Conditions: st.Conditions}
		mu.Lock()
		n++
		node.Conditions = append(node.Conditions, Condition{Type: "Seq", Status: strconv.Itoa(n)})
		b, _ := json.Marshal(node)
		latest[node.Node] = string(b)
		publish := n%2 == 0
		mu.Unlock()
		if publish {
			if err := nodes.Set(node); err != nil {
				return nil, err
			}
		}
		env.Apply(ctx)
		return &AckV2{Accepted: true, Generation: 1}, nil
	})
	return &upgradesim.Instance{Server: srv, Topics: map[string]upgradesim.TopicState{
		"Nodes@2.0.0": func() (map[string]string, bool) {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(latest), true
		}}}, nil
}

// kubelet starts a kubelet: v1 calls 1.0.0; v2 calls 2.0.0, and in fork
// mode also 1.0.0 nodecontrollers and the pinned 1.0.0 extender. It
// watches the topic Nodes at its own version.
func kubelet(cs contracts, v2, fork, external, exactlyOnce bool) func(env *upgradesim.Env) (*upgradesim.Instance, error) {
	return func(env *upgradesim.Env) (*upgradesim.Instance, error) {
		cfg := framework.ClientConfig{Release: "1.30.0", ExactlyOnce: exactlyOnce}
		contract := cs.v1
		if v2 {
			cfg.Release, contract = "1.31.0", cs.v2
			if fork {
				cfg.Fork = []framework.Fork{cs.forkV1}
			}
			if fork && external {
				cfg.Pinned = []framework.PinnedPeer{{URL: env.Endpoints("extender")[0] + "/ext", Version: "1.0.0"}}
			}
		}
		cl, err := framework.NewClient(contract, env.ClientConfig("nodecontroller", cfg))
		if err != nil {
			return nil, err
		}
		inst := &upgradesim.Instance{Clients: map[string]*framework.Client{"nodecontroller": cl}}
		var stop func()
		var done <-chan struct{}
		if v2 {
			inf, err := framework.Watch[StatusV2](env.Context(), cl, "Nodes", framework.InformerHandlers[StatusV2]{})
			if err != nil {
				return nil, err
			}
			inst.Topics = map[string]upgradesim.TopicState{"Nodes@2.0.0": upgradesim.InformerState(inf)}
			stop, done = inf.Stop, inf.Done()
		} else {
			inf, err := framework.Watch[StatusV1](env.Context(), cl, "Nodes", framework.InformerHandlers[StatusV1]{})
			if err != nil {
				return nil, err
			}
			inst.Topics = map[string]upgradesim.TopicState{"Nodes@1.0.0": upgradesim.InformerState(inf)}
			stop, done = inf.Stop, inf.Done()
		}
		inst.Close = func() error {
			stop()
			<-done
			return nil
		}
		return inst, nil
	}
}

// extender is the external peer: it serves /ext/report at 1.0.0 without
// lockstep, and calls the nodecontroller at 1.0.0.
func extender(cs contracts) func(env *upgradesim.Env) (*upgradesim.Instance, error) {
	return func(env *upgradesim.Env) (*upgradesim.Instance, error) { return startExtender(cs, env) }
}

func startExtender(cs contracts, env *upgradesim.Env) (*upgradesim.Instance, error) {
	cl, err := framework.NewClient(cs.v1, env.ClientConfig("nodecontroller", framework.ClientConfig{
		Component: "kubelet", Release: "1.30.0"}))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ext/report", func(w http.ResponseWriter, r *http.Request) {
		var st StatusV1
		if err := json.NewDecoder(r.Body).Decode(&st); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		env.ApplyRequest(r)
		_ = json.NewEncoder(w).Encode(AckV1{OK: true})
	})
	return &upgradesim.Instance{Handler: mux, Clients: map[string]*framework.Client{"nodecontroller": cl}}, nil
}

// externalTimeout is the extender's call timeout (see config).
const externalTimeout = 30 * time.Second

// config declares the world.
func (w world) config() upgradesim.Config {
	speaks := func(versions ...string) map[string][]string { return map[string][]string{"nodeinfo": versions} }
	v2Speaks := speaks("2.0.0")
	if w.fork {
		v2Speaks = speaks("2.0.0", "1.0.0")
	}
	cs := w.contracts()
	ncV2 := nodecontroller(cs, true, w.fork, 1, cs.v2)
	switch w.brokenV2 {
	case "any-version":
		ncV2 = anyVersionServer
	case "no-apply":
		ncV2 = nodecontroller(cs, true, w.fork, 0, cs.v2)
	case "apply-twice":
		ncV2 = nodecontroller(cs, true, w.fork, 2, cs.v2)
	case "fingerprint":
		ncV2 = nodecontroller(cs, true, w.fork, 1, cs.v2Changed)
	case "drops-updates":
		ncV2 = droppingPublisher
	}
	timeout, extTimeout := w.timeout, w.timeout
	if timeout == 0 {
		timeout, extTimeout = 10*time.Second, externalTimeout
	}
	rate := w.rate
	if rate == 0 {
		rate = 40
	}
	cfg := upgradesim.Config{
		Components: []upgradesim.Component{
			{Name: "nodecontroller", Replicas: w.nodecontrollers, Versions: []upgradesim.Version{
				{Name: "v1", Speaks: speaks("1.0.0"), Start: nodecontroller(cs, false, false, 1, nil)},
				{Name: "v2", Speaks: v2Speaks, Start: ncV2},
			}},
			{Name: "kubelet", Replicas: w.kubelets, Versions: []upgradesim.Version{
				{Name: "v1", Speaks: speaks("1.0.0"), Start: kubelet(cs, false, w.fork, w.external, w.exactlyOnce)},
				{Name: "v2", Speaks: v2Speaks, Start: kubelet(cs, true, w.fork, w.external, w.exactlyOnce)},
			}},
		},
		Traffic: []upgradesim.Traffic{
			{From: "kubelet", To: "nodecontroller", Rate: rate, Timeout: timeout, Call: report},
		},
		Watches: []upgradesim.Watch{
			{Topic: "Nodes@1.0.0", Watcher: "kubelet", Holder: "nodecontroller"},
			{Topic: "Nodes@2.0.0", Watcher: "kubelet", Holder: "nodecontroller"},
		},
		BlockedBound: w.bound,
	}
	if w.external {
		cfg.Components = append(cfg.Components, upgradesim.Component{Name: "extender", External: true,
			Versions: []upgradesim.Version{{Name: "v1", Speaks: speaks("1.0.0"), Start: extender(cs)}}})
		// The extender waits for a replacement when its only nodecontroller
		// is upgraded: on a loaded 2-core machine under the race detector
		// that drain and start took 6.5s (load 33), so by default its calls
		// get 30s: how fast a replacement starts is not what the plans
		// test.
		cfg.Traffic = append(cfg.Traffic, upgradesim.Traffic{From: "extender", To: "nodecontroller", Rate: 20, Timeout: extTimeout, Call: report})
	}
	return cfg
}
