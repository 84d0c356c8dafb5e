package framework_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// nodeinfo v1: {node, ready} answered {ok}. v2 restructures readiness into
// conditions and answers {accepted, generation}: a breaking change.
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

var (
	nodeinfoV1 = framework.MustContract(handshake.Contract{
		Name: "nodeinfo", Version: "1.0.0", Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{
			"Report":      {Request: "Status", Response: "Ack", Path: "report"},
			"ReportMany":  {Request: "Status", Response: "Ack", Batch: true, Path: "report-many"},
			"OnlyInOldV1": {Request: "Status", Response: "Ack", Path: "old"},
		},
		Schemas: map[string]json.RawMessage{
			"Status": json.RawMessage(`{"type":"object","required":["node","ready"],"additionalProperties":false,
				"properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"}}}`),
			"Ack": json.RawMessage(`{"type":"object","required":["ok"],"additionalProperties":false,"properties":{"ok":{"type":"boolean"}}}`),
		},
	})
	nodeinfoV2 = framework.MustContract(handshake.Contract{
		Name: "nodeinfo", Version: "2.0.0", Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{
			"Report":     {Request: "Status", Response: "Ack"},
			"ReportMany": {Request: "Status", Response: "Ack", Batch: true},
			"Describe":   {Request: "Status", Response: "Ack"},
		},
		Schemas: map[string]json.RawMessage{
			"Status": json.RawMessage(`{"type":"object","required":["node","conditions"],"additionalProperties":false,
				"properties":{"node":{"type":"string","minLength":1},"conditions":{"type":"array","items":{
				"type":"object","required":["type","status"],"properties":{"type":{"type":"string"},
				"status":{"enum":["True","False","Unknown"]}}}}}}`),
			"Ack": json.RawMessage(`{"type":"object","required":["accepted","generation"],"additionalProperties":false,
				"properties":{"accepted":{"type":"boolean"},"generation":{"type":"integer"}}}`),
		},
	})
)

// Hand-written conversions, as generated code would call them.
func statusV1ToV2(in *StatusV1) (*StatusV2, error) {
	st := "False"
	if in.Ready {
		st = "True"
	}
	return &StatusV2{Node: in.Node, Conditions: []Condition{{Type: "Ready", Status: st}}}, nil
}

func statusV2ToV1(in *StatusV2) (*StatusV1, error) {
	out := &StatusV1{Node: in.Node}
	for _, c := range in.Conditions {
		if c.Type == "Ready" {
			out.Ready = c.Status == "True"
		}
	}
	return out, nil
}

func ackV2ToV1(in *AckV2) (*AckV1, error) { return &AckV1{OK: in.Accepted}, nil }
func ackV1ToV2(in *AckV1) (*AckV2, error) { return &AckV2{Accepted: in.OK}, nil }

// forkClient is what a generated v2 package's fork options would build.
var forkV1 = framework.Fork{Contract: nodeinfoV1, Methods: map[string]framework.MethodConversion{
	"Report":     framework.ConvertMethod(statusV2ToV1, ackV1ToV2),
	"ReportMany": framework.ConvertMethod(statusV2ToV1, ackV1ToV2),
}}

// nodeinfoServer serves nodeinfo at v2, and with fork also at v1 by
// conversion; or only at v1 when v1only. It records the versions calls
// arrived at and that handlers only ever saw v2 types.
type nodeinfoServer struct {
	*frameworktest.Running
	mu       sync.Mutex
	versions map[string]int
	handled  atomic.Int64
}

func (n *nodeinfoServer) saw(ctx context.Context) {
	n.mu.Lock()
	n.versions[framework.CallFromContext(ctx).Version]++
	n.mu.Unlock()
}

func (n *nodeinfoServer) count(v string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.versions[v]
}

func startNodeinfo(t *testing.T, addr string, v2, fork bool) *nodeinfoServer {
	t.Helper()
	n := &nodeinfoServer{versions: map[string]int{}}
	release := "1.30.0"
	if v2 {
		release = "1.31.0"
	}
	n.Running = frameworktest.StartServerAt(t, addr, framework.ServerConfig{Component: "nodecontroller", Release: release,
		SessionTTL: 2 * time.Second, Heartbeat: 200 * time.Millisecond}, func(s *framework.Server) {
		if !v2 {
			h := func(ctx context.Context, st *StatusV1) (*AckV1, error) {
				n.saw(ctx)
				n.handled.Add(1)
				return &AckV1{OK: st.Ready}, nil
			}
			framework.HandleUnary(s, nodeinfoV1, "Report", h)
			framework.HandleUnary(s, nodeinfoV1, "OnlyInOldV1", h)
			framework.HandleBatch(s, nodeinfoV1, "ReportMany", h)
			return
		}
		h := func(ctx context.Context, st *StatusV2) (*AckV2, error) {
			n.saw(ctx)
			ready := false
			for _, c := range st.Conditions {
				ready = ready || (c.Type == "Ready" && c.Status == "True")
			}
			return &AckV2{Accepted: ready, Generation: n.handled.Add(1)}, nil
		}
		framework.HandleUnary(s, nodeinfoV2, "Report", h)
		framework.HandleUnary(s, nodeinfoV2, "Describe", h)
		framework.HandleBatch(s, nodeinfoV2, "ReportMany", h)
		if fork {
			framework.ForkUnary(s, nodeinfoV1, nodeinfoV2, "Report", statusV1ToV2, ackV2ToV1)
			framework.ForkBatch(s, nodeinfoV1, nodeinfoV2, "ReportMany", statusV1ToV2, ackV2ToV1)
			// A method v2 dropped keeps a hand-written v1 handler.
			framework.HandleUnary(s, nodeinfoV1, "OnlyInOldV1", func(ctx context.Context, st *StatusV1) (*AckV1, error) {
				n.saw(ctx)
				return &AckV1{OK: true}, nil
			})
		}
	})
	return n
}

func nodeinfoClient(t *testing.T, v2, fork bool, cfg framework.ClientConfig) *framework.Client {
	t.Helper()
	cfg.Component, cfg.Release = "kubelet", "1.31.0"
	c := nodeinfoV1
	if v2 {
		c = nodeinfoV2
		if fork {
			cfg.Fork = []framework.Fork{forkV1}
		}
	}
	return frameworktest.NewClient(t, c, cfg)
}

func ready(node string) *StatusV2 {
	return &StatusV2{Node: node, Conditions: []Condition{{Type: "Ready", Status: "True"}}}
}

func TestForkedServerServesOldAndNewClientsWithOneHandler(t *testing.T) {
	srv := startNodeinfo(t, "127.0.0.1:0", true, true)
	oldClient := nodeinfoClient(t, false, false, framework.ClientConfig{Endpoints: []string{srv.URL}})
	newClient := nodeinfoClient(t, true, false, framework.ClientConfig{Endpoints: []string{srv.URL}})
	ctx := timeout(t, 10*time.Second)

	a1, err := framework.CallUnary[StatusV1, AckV1](ctx, oldClient, "Report", &StatusV1{Node: "n1", Ready: true})
	require.NoError(t, err)
	assert.True(t, a1.OK)
	a2, err := framework.CallUnary[StatusV2, AckV2](ctx, newClient, "Report", ready("n2"))
	require.NoError(t, err)
	assert.True(t, a2.Accepted)
	assert.Equal(t, int64(2), a2.Generation, "one handler counted both calls")

	// Batches convert per item, errors included.
	res, err := framework.CallBatch[StatusV1, AckV1](ctx, oldClient, "ReportMany",
		[]*StatusV1{{Node: "n3", Ready: true}, {Node: "", Ready: true}, {Node: "n4"}})
	require.NoError(t, err)
	require.Len(t, res, 3)
	assert.True(t, res[0].Value.OK)
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(res[1].Err))
	assert.False(t, res[2].Value.OK)

	// A method v2 dropped still has its hand-written v1 handler.
	_, err = framework.CallUnary[StatusV1, AckV1](ctx, oldClient, "OnlyInOldV1", &StatusV1{Node: "n5"})
	require.NoError(t, err)

	// The status shows who still speaks 1.0.0, so an operator knows when the
	// fork can be retired.
	st := srv.Server.Status()
	assert.Equal(t, []string{"1.0.0", "2.0.0"}, st.Contracts["nodeinfo"])
	assert.Equal(t, map[string]int{"1.0.0": 1, "2.0.0": 1}, st.PeersByVersion["nodeinfo"])
	// Handlers saw each v1 call (two valid batch items) as arriving at 1.0.0.
	assert.Equal(t, 4, srv.count("1.0.0"))
	assert.Equal(t, 1, srv.count("2.0.0"))
}

func TestForkedClientCallsEachServerInItsOwnVersion(t *testing.T) {
	v1 := startNodeinfo(t, "127.0.0.1:0", false, false)
	v2 := startNodeinfo(t, "127.0.0.1:0", true, false)
	ctx := timeout(t, 10*time.Second)

	for _, tc := range []struct {
		name string   // which servers the client knows
		urls []string // their URLs
	}{
		{"only v1", []string{v1.URL}},
		{"only v2", []string{v2.URL}},
		{"mixed", []string{v1.URL, v2.URL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := nodeinfoClient(t, true, true, framework.ClientConfig{Endpoints: tc.urls})
			require.Eventually(t, func() bool { return readyCount(cl) == len(tc.urls) }, 5*time.Second, 5*time.Millisecond)
			before1, before2 := v1.handled.Load(), v2.handled.Load()
			for i := 0; i < 20; i++ {
				ack, err := framework.CallUnary[StatusV2, AckV2](ctx, cl, "Report", ready("n"))
				require.NoError(t, err)
				assert.True(t, ack.Accepted)
			}
			res, err := framework.CallBatch[StatusV2, AckV2](ctx, cl, "ReportMany", []*StatusV2{ready("a"), {Node: "b", Conditions: []Condition{}}})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)
			require.NoError(t, res[1].Err)
			assert.True(t, res[0].Value.Accepted)
			assert.False(t, res[1].Value.Accepted)
			got1, got2 := v1.handled.Load()-before1, v2.handled.Load()-before2
			assert.Equal(t, int64(22), got1+got2)
			if len(tc.urls) == 2 {
				assert.Positive(t, got1, "the v1 server got calls, in v1")
				assert.Positive(t, got2, "the v2 server got calls, in v2")
			}
			// A method v1 lacks goes only where it exists.
			if tc.name == "only v1" {
				_, err := framework.CallUnary[StatusV2, AckV2](ctx, cl, "Describe", ready("x"), framework.FailFast())
				assert.Error(t, err)
			} else {
				_, err := framework.CallUnary[StatusV2, AckV2](ctx, cl, "Describe", ready("x"))
				assert.NoError(t, err)
			}
		})
	}
	assert.Zero(t, v2.count("1.0.0"))
	assert.Positive(t, v1.count("1.0.0"))
}

func TestForkConfigurationMistakesAreRefusedUpFront(t *testing.T) {
	base := framework.ClientConfig{Component: "kubelet", Release: "1.0.0", Endpoints: []string{"http://127.0.0.1:1"}}

	cfg := base
	cfg.Pinned = []framework.PinnedPeer{{URL: "http://127.0.0.1:2", Version: "1.0.0"}}
	_, err := framework.NewClient(nodeinfoV2, cfg)
	require.ErrorContains(t, err, "pinned peer http://127.0.0.1:2 speaks nodeinfo 1.0.0, which this client cannot call: run it in fork mode")

	cfg = base
	cfg.Fork = []framework.Fork{{Contract: nodeinfoV1, Methods: map[string]framework.MethodConversion{
		"Report": framework.ConvertMethod(statusV2ToV1, ackV1ToV2)}}}
	_, err = framework.NewClient(nodeinfoV2, cfg)
	require.ErrorContains(t, err, "fork 1.0.0 has no conversion for method ReportMany")

	cfg = base
	cfg.Fork = []framework.Fork{{Contract: nodeinfoV2}}
	_, err = framework.NewClient(nodeinfoV1, cfg)
	require.ErrorContains(t, err, "not earlier")

	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	framework.ForkUnary(srv, nodeinfoV1, nodeinfoV2, "Report", statusV1ToV2, ackV2ToV1)
	framework.ForkBatch(srv, nodeinfoV1, nodeinfoV2, "ReportMany", statusV1ToV2, ackV2ToV1)
	framework.HandleUnary(srv, nodeinfoV1, "OnlyInOldV1", func(context.Context, *StatusV1) (*AckV1, error) { return &AckV1{}, nil })
	require.ErrorContains(t, srv.Start(), "method Report is forked to 2.0.0, which has no handler for it")
}

// extenderV1 is a plain HTTP server that knows nothing of lockstep: it
// speaks nodeinfo v1 JSON at its own paths.
func extenderV1(t *testing.T, answer func(w http.ResponseWriter, st StatusV1)) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(protocol.HeaderSession) != "" {
			http.Error(w, "unexpected session header", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/ext/report":
			var st StatusV1
			if err := json.Unmarshal(body, &st); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			answer(w, st)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestPinnedPeerIsCalledAtItsVersionAndHostileAnswersAreCoded(t *testing.T) {
	var mode atomic.Value
	mode.Store("good")
	ext, calls := extenderV1(t, func(w http.ResponseWriter, st StatusV1) {
		switch mode.Load() {
		case "good":
			_ = json.NewEncoder(w).Encode(AckV1{OK: st.Ready})
		case "invalid":
			_, _ = w.Write([]byte(`{"ok":"yes"}`))
		case "truncated":
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write([]byte(`{"ok":tr`))
		case "huge":
			_, _ = w.Write([]byte(`{"ok":true,"pad":"` + strings.Repeat("x", 2<<20) + `"}`))
		case "notjson":
			_, _ = w.Write([]byte(`<html>hello</html>`))
		case "error":
			http.Error(w, "extender exploded", http.StatusInternalServerError)
		case "empty":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "indented":
			// As go-restful writes a ServiceError.
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("{\n \"Code\": 500,\n \"Message\": \"unable to report\"\n}"))
		}
	})
	cl := nodeinfoClient(t, true, true, framework.ClientConfig{
		Pinned:           []framework.PinnedPeer{{URL: ext.URL + "/ext", Version: "1.0.0"}},
		MaxResponseBytes: 1 << 20,
	})
	ctx := timeout(t, 10*time.Second)
	ack, err := framework.CallUnary[StatusV2, AckV2](ctx, cl, "Report", ready("n1"))
	require.NoError(t, err)
	assert.True(t, ack.Accepted)

	for _, tc := range []struct {
		mode string         // how the peer misbehaves
		code framework.Code // the caller's error code
		text string         // part of the message
	}{
		{"invalid", framework.CodeInternal, "not a valid Ack"},
		{"truncated", framework.CodeUnavailable, "reading answer"},
		{"huge", framework.CodePayloadTooLarge, "exceeds"},
		{"notjson", framework.CodeInternal, "not a valid Ack"},
		// A status with a body not in the lockstep shape names the URL
		// that answered, and the body without its trailing newline.
		{"error", framework.CodeInternal, "internal: " + ext.URL + "/ext/report answered HTTP 500 Internal Server Error: extender exploded"},
		{"empty", framework.CodeUnavailable, "unavailable: " + ext.URL + "/ext/report answered HTTP 503 Service Unavailable"},
		{"indented", framework.CodeInternal, "internal: " + ext.URL + `/ext/report answered HTTP 500 Internal Server Error: { "Code": 500, "Message": "unable to report" }`},
	} {
		mode.Store(tc.mode)
		_, err := framework.CallUnary[StatusV2, AckV2](ctx, cl, "Report", ready("n1"))
		assert.Equal(t, tc.code, framework.CodeOf(err), "%s: %v", tc.mode, err)
		assert.ErrorContains(t, err, tc.text, tc.mode)
		if tc.mode == "error" || tc.mode == "empty" || tc.mode == "indented" {
			assert.Equal(t, tc.text, err.Error(), tc.mode)
		}
	}
	mode.Store("good")
	_, err = framework.CallUnary[StatusV2, AckV2](ctx, cl, "Report", ready("n1"))
	require.NoError(t, err, "the client keeps working after hostile answers")
	assert.Equal(t, int64(9), calls.Load(), "no call was resent")
}

func TestRollingUpgradeWithExternalOldPeer(t *testing.T) {
	for _, forkMode := range []bool{true, false} {
		name := map[bool]string{true: "fork", false: "lockstep"}[forkMode]
		t.Run(name, func(t *testing.T) {
			// The external extender speaks only v1 and never upgrades; it
			// calls the nodecontroller, and the kubelet calls it pinned.
			ext, extCalls := extenderV1(t, func(w http.ResponseWriter, st StatusV1) {
				_ = json.NewEncoder(w).Encode(AckV1{OK: true})
			})
			nc := startNodeinfo(t, "127.0.0.1:0", false, false)
			extClient := nodeinfoClient(t, false, false, framework.ClientConfig{Endpoints: []string{nc.URL}})
			kubelet := nodeinfoClient(t, false, false, framework.ClientConfig{Endpoints: []string{nc.URL}})
			ctx := timeout(t, 60*time.Second)
			for i := 0; i < 5; i++ {
				_, err := framework.CallUnary[StatusV1, AckV1](ctx, extClient, "Report", &StatusV1{Node: "x", Ready: true})
				require.NoError(t, err)
			}

			// Upgrade the nodecontroller to v2 (forked or not) in place.
			require.NoError(t, nc.Stop())
			nc2 := startNodeinfo(t, nc.Addr, true, forkMode)
			var extFailed atomic.Int64
			// Generous in fork mode, where the call must succeed; short in
			// lockstep mode, where it is expected to block.
			bound := 10 * time.Second
			if !forkMode {
				bound = time.Second
			}
			extCall := func() error {
				c, cancel := context.WithTimeout(ctx, bound)
				defer cancel()
				_, err := framework.CallUnary[StatusV1, AckV1](c, extClient, "Report", &StatusV1{Node: "x", Ready: true})
				if err != nil {
					extFailed.Add(1)
				}
				return err
			}
			// Upgrade the kubelet to v2: it still calls the v1 extender pinned.
			kubeletCfg := framework.ClientConfig{Endpoints: []string{nc.URL}}
			if forkMode {
				kubeletCfg.Pinned = []framework.PinnedPeer{{URL: ext.URL + "/ext", Version: "1.0.0"}}
			}
			kubelet2 := nodeinfoClient(t, true, forkMode, kubeletCfg)
			_ = kubelet
			for i := 0; i < 10; i++ {
				err := extCall()
				if forkMode {
					require.NoError(t, err, "the v1 extender keeps working against a forked v2 nodecontroller")
				} else {
					require.Error(t, err, "in lockstep mode the v1 extender blocks until both sides match")
					break
				}
				_, err = framework.CallUnary[StatusV2, AckV2](ctx, kubelet2, "Report", ready("n"))
				require.NoError(t, err)
			}
			if forkMode {
				assert.Zero(t, extFailed.Load())
				assert.Positive(t, extCalls.Load(), "the kubelet reached the pinned v1 extender")
				assert.Positive(t, nc2.count("1.0.0"))
			} else {
				assert.Zero(t, nc2.count("1.0.0"))
				_, err := framework.CallUnary[StatusV2, AckV2](ctx, kubelet2, "Report", ready("n"))
				require.NoError(t, err, "v2 to v2 works")
			}
		})
	}
}
