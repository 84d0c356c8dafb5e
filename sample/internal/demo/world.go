package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/upgradesim"
	extv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
	"github.com/lockstep-dev/lockstep/sample/internal/extender"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// The control plane the demo runs, as upgradesim components. Every version
// of every component is the sample's own code (the same the binaries run),
// started in this process on its own loopback address.

// Component names, as the plan and the timeline show them.
const (
	NodeController = "nodecontroller"
	Kubelet        = "kubelet"
	Scheduler      = "scheduler"
	Extender       = "extender"
	// LegacyExtender is a plain Kubernetes scheduler extender: it speaks
	// extender 1.0.0 without a handshake and is never upgraded, so the
	// scheduler reaches it as a pinned peer, in fork mode once it runs v2.
	LegacyExtender = "legacy-extender"
)

// LegacyPrefix is the legacy extender's urlPrefix.
const LegacyPrefix = "/scheduler"

// MaintenanceNode is the node both extenders hold in a maintenance window.
const MaintenanceNode = "node-003"

// world holds what the demo's components are, for the traffic and the
// invariants to reach them.
type world struct {
	nodes int
	grace time.Duration
	ids   *identities

	mu         sync.Mutex
	kubelets   map[*framework.Client]*kubelet.Kubelet
	schedulers map[*framework.Client]*scheduler.Scheduler
	// ncs are the running node controller replicas; lease elects the
	// one that writes NodeHealth.
	ncs   map[*nodecontroller.NodeController]bool
	lease *nodecontroller.MemoryLease
	// liveness records which replicas hear each node's kubelet, so that a
	// node is lost only once none has heard it for the grace period.
	liveness *nodecontroller.Liveness
	// pods is the record of bound pods the replicas share; loop follows
	// every pod from its binding to its kubelet's report that it runs.
	pods *nodecontroller.PodStore
	loop *podLoop
	// heard follows when each node's kubelet was last heard, for
	// nodes-stay-known.
	heard *heardWatch
	sched *scheduler.Scheduler
	// every incarnation, in start order, for the outcomes
	allKubelets   []versioned[*kubelet.Kubelet]
	allSchedulers []versioned[*scheduler.Scheduler]
	allNCs        []versioned[*nodecontroller.NodeController]
}

type versioned[T any] struct {
	version string
	c       T
}

func newWorld(nodes int, grace time.Duration, ids *identities) *world {
	w := &world{nodes: nodes, grace: grace, ids: ids, kubelets: map[*framework.Client]*kubelet.Kubelet{},
		schedulers: map[*framework.Client]*scheduler.Scheduler{},
		ncs:        map[*nodecontroller.NodeController]bool{}, lease: nodecontroller.NewMemoryLease(), liveness: nodecontroller.NewLiveness(),
		pods: nodecontroller.NewPodStore(), loop: newPodLoop(runBound), heard: newHeardWatch(grace)}
	w.pods.Subscribe(w.loop.observe)
	return w
}

// identity is the name in a replica's certificate, lockstep://<component>/<name>:
// the replica's own ("nodecontroller-1"), but for the kubelet the nodes it
// simulates, which the node controller grants it (nodecontroller.Config's
// NodeSets, the Node authorizer's idea): no other certificate may report
// them.
func (w *world) identity(env *upgradesim.Env) string {
	if env.Component == Kubelet {
		return w.kubeletIdentity()
	}
	return fmt.Sprintf("%s-%d", env.Component, env.Replica)
}

// kubeletIdentity is the name in the kubelet's certificate: the nodes it
// simulates, node-000 to node-<nodes-1>, granted to it by their prefix.
func (w *world) kubeletIdentity() string {
	return fmt.Sprintf("nodes-000-%03d", w.nodes-1)
}

// serverConfig is a lockstep server's configuration in the demo: mutual
// TLS with the replica's certificate, and short sessions and drains, so an
// upgrade takes a fraction of a second. component is the component it
// serves as.
func (w *world) serverConfig(env *upgradesim.Env, component string) (framework.ServerConfig, error) {
	creds, err := w.ids.of(component, w.identity(env))
	if err != nil {
		return framework.ServerConfig{}, err
	}
	return env.ServerConfig(framework.ServerConfig{Component: component, Release: daemon.Releases[env.Version], MTLS: creds,
		SessionTTL: time.Second, Heartbeat: 100 * time.Millisecond, DrainTimeout: 500 * time.Millisecond, DrainQuiet: 20 * time.Millisecond}), nil
}

// clientConfig is a client's configuration in the demo: the replica's
// certificate presented to the server, whose certificate must chain to
// the demo's CA.
func (w *world) clientConfig(env *upgradesim.Env, server string, cfg framework.ClientConfig) (framework.ClientConfig, error) {
	creds, err := w.ids.of(env.Component, w.identity(env))
	if err != nil {
		return framework.ClientConfig{}, err
	}
	cfg.Release = daemon.Releases[env.Version]
	cfg.Transport = creds.Transport("")
	return env.ClientConfig(server, cfg), nil
}

func applied(env *upgradesim.Env) func(context.Context) {
	return env.Apply
}

func (w *world) startNodeController(env *upgradesim.Env) (*upgradesim.Instance, error) {
	server, err := w.serverConfig(env, NodeController)
	if err != nil {
		return nil, err
	}
	n, err := nodecontroller.New(nodecontroller.Config{API: env.Version, NodeGrace: w.grace, ResyncAfter: 300 * time.Millisecond,
		Server: server, Applied: applied(env), Logger: env.Logger, Lease: w.lease, LeaseTTL: 600 * time.Millisecond, Pods: w.pods, Liveness: w.liveness,
		Evicted: w.loop.evicted, NodeSets: map[string]string{w.kubeletIdentity(): "node-"}})
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.ncs[n] = true
	w.allNCs = append(w.allNCs, versioned[*nodecontroller.NodeController]{env.Version, n})
	w.mu.Unlock()
	topics := map[string]upgradesim.TopicState{}
	if t := n.TopicV1(); t != nil {
		topics["NodeHealth@1.0.0"] = upgradesim.ViewState(t.TopicView)
	}
	if t := n.TopicV2(); t != nil {
		topics["NodeHealth@2.0.0"] = upgradesim.ViewState(t.TopicView)
	}

	return &upgradesim.Instance{Server: n.Server(), Topics: topics, Close: func() error {
		w.mu.Lock()
		delete(w.ncs, n)
		w.mu.Unlock()
		n.Close()
		return nil
	}}, nil
}

func (w *world) startKubelet(env *upgradesim.Env) (*upgradesim.Instance, error) {
	client, err := w.clientConfig(env, NodeController, framework.ClientConfig{})
	if err != nil {
		return nil, err
	}
	k, err := kubelet.New(kubelet.Config{API: env.Version, Nodes: w.nodes, ChangeEvery: time.Second, PodsEnd: true,
		CPUMillis: NodeCPUMillis, Client: client, Logger: env.Logger})
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.kubelets[k.Client(0)] = k
	w.allKubelets = append(w.allKubelets, versioned[*kubelet.Kubelet]{env.Version, k})
	w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.Run(env.Context())
	}()
	return &upgradesim.Instance{
		Clients: map[string]*framework.Client{NodeController: k.Client(0)},
		Close: func() error {
			<-done
			k.Close()
			return nil
		},
	}, nil
}

func (w *world) startScheduler(env *upgradesim.Env) (*upgradesim.Instance, error) {
	fork := env.Version == "v2"
	nodeHealth, err := w.clientConfig(env, NodeController, framework.ClientConfig{})
	if err != nil {
		return nil, err
	}
	ext, err := w.clientConfig(env, Extender, framework.ClientConfig{})
	if err != nil {
		return nil, err
	}
	legacy, err := w.clientConfig(env, LegacyExtender, framework.ClientConfig{Source: framework.StaticEndpoints{}})
	if err != nil {
		return nil, err
	}
	s, err := scheduler.New(scheduler.Config{API: env.Version, Fork: fork, PodRate: 10, CallTimeout: 10 * time.Second,
		NodeHealth: nodeHealth,
		Extenders: []scheduler.ExtenderConfig{
			{Name: Extender, Client: ext, Bind: true, Preempt: true, Weight: 1},
			// A pinned peer only: no endpoints to handshake.
			{Name: LegacyExtender, Client: legacy, Preempt: true,
				PinnedURL: env.Endpoints(LegacyExtender)[0] + LegacyPrefix, PinnedVersion: "1.0.0", Weight: 1},
		},
		Logger: env.Logger, OnBound: w.loop.bound,
	})
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.sched = s
	w.allSchedulers = append(w.allSchedulers, versioned[*scheduler.Scheduler]{env.Version, s})
	for _, c := range []*framework.Client{s.NodeClient(), s.ExtenderClient(Extender), s.ExtenderClient(LegacyExtender)} {
		w.schedulers[c] = s
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(env.Context())
	}()
	topics := map[string]upgradesim.TopicState{}
	if i := s.InformerV1(); i != nil {
		topics["NodeHealth@1.0.0"] = upgradesim.InformerState(i)
	}
	if i := s.InformerV2(); i != nil {
		topics["NodeHealth@2.0.0"] = upgradesim.InformerState(i)
	}
	return &upgradesim.Instance{
		Clients: map[string]*framework.Client{
			NodeController: s.NodeClient(), Extender: s.ExtenderClient(Extender), LegacyExtender: s.ExtenderClient(LegacyExtender),
		},
		Topics: topics,
		Close: func() error {
			<-done
			s.Close()
			return nil
		},
	}, nil
}

func (w *world) startExtender(env *upgradesim.Env) (*upgradesim.Instance, error) {
	e, err := extender.New(extender.Config{API: env.Version, Fork: env.Version == "v2", Maintenance: []string{MaintenanceNode},
		Applied: applied(env), Logger: env.Logger})
	if err != nil {
		return nil, err
	}
	cfg, err := w.serverConfig(env, Extender)
	if err != nil {
		return nil, err
	}
	srv, err := e.Server(cfg)
	if err != nil {
		return nil, err
	}
	return &upgradesim.Instance{Server: srv}, nil
}

func (w *world) startLegacyExtender(env *upgradesim.Env) (*upgradesim.Instance, error) {
	e, err := extender.New(extender.Config{API: "v1", Plain: true, PlainPrefix: LegacyPrefix, Maintenance: []string{MaintenanceNode},
		Applied: applied(env), Logger: env.Logger})
	if err != nil {
		return nil, err
	}
	// The contract's server, whatever the demo calls this replica.
	cfg, err := w.serverConfig(env, extv1.Contract.Server())
	if err != nil {
		return nil, err
	}
	srv, err := e.Server(cfg)
	if err != nil {
		return nil, err
	}
	return &upgradesim.Instance{Server: srv}, nil
}

func (w *world) kubeletOf(c *framework.Client) *kubelet.Kubelet {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kubelets[c]
}

func (w *world) schedulerOf(c *framework.Client) *scheduler.Scheduler {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.schedulers[c]
}

// current returns the node controller replica that writes NodeHealth (nil
// between leaders) and the latest scheduler.
func (w *world) current() (*nodecontroller.NodeController, *scheduler.Scheduler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n := range w.ncs {
		if n.Leader() {
			return n, w.sched
		}
	}
	return nil, w.sched
}

// kubeletConnected reports whether every node of the latest kubelet holds
// a session with a compatible node controller.
func (w *world) kubeletConnected() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.allKubelets) == 0 {
		return false
	}
	return w.allKubelets[len(w.allKubelets)-1].c.Ready() == nil
}

// replicas returns the running node controller replicas.
func (w *world) replicas() []*nodecontroller.NodeController {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*nodecontroller.NodeController, 0, len(w.ncs))
	for n := range w.ncs {
		out = append(out, n)
	}
	return out
}

// nodeNames are the nodes the kubelet simulates.
func (w *world) nodeNames() []string {
	out := make([]string, w.nodes)
	for i := range out {
		out[i] = fmt.Sprintf("node-%03d", i)
	}
	return out
}

// filter is one Filter call of the scheduler with a fresh pod over the
// nodes it would consider (all of them while its cache is empty).
func (w *world) filter(name string) func(ctx context.Context, c *framework.Client) error {
	return func(ctx context.Context, c *framework.Client) error {
		s := w.schedulerOf(c)
		if s == nil {
			return errors.New("no scheduler holds this client")
		}
		nodes := s.Candidates()
		if len(nodes) == 0 {
			nodes = w.nodeNames()
		}
		_, err := s.Filter(ctx, name, s.NewPod(), nodes)
		return err
	}
}

// config declares the control plane to upgradesim.
func (w *world) config() upgradesim.Config {
	speaks := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = append(m[kv[i]], kv[i+1])
		}
		return m
	}
	return upgradesim.Config{
		HTTPS: true, // every server serves mutual TLS (serverConfig)
		Components: []upgradesim.Component{
			// Three replicas; a simple lease elects the one that writes
			// NodeHealth, and the schedulers' informers follow it through
			// the rolling upgrade (docs/topics.md, writer-aware routing).
			{Name: NodeController, Replicas: 3, Versions: []upgradesim.Version{
				{Name: "v1", Speaks: speaks("nodestatus", "1.0.0", "nodehealth", "1.0.0"), Start: w.startNodeController},
				{Name: "v2", Speaks: speaks("nodestatus", "2.0.0", "nodehealth", "2.0.0"), Start: w.startNodeController},
				// A minor release: nodestatus 2.1.0 derives from 2.0.0
				// compatibly, so it speaks both, with no fork mode.
				{Name: "v2.1", Speaks: speaks("nodestatus", "2.1.0", "nodestatus", "2.0.0", "nodehealth", "2.0.0"), Start: w.startNodeController},
			}},
			{Name: Kubelet, Versions: []upgradesim.Version{
				{Name: "v1", Speaks: speaks("nodestatus", "1.0.0"), Start: w.startKubelet},
				{Name: "v2", Speaks: speaks("nodestatus", "2.0.0"), Start: w.startKubelet},
				{Name: "v2.1", Speaks: speaks("nodestatus", "2.1.0", "nodestatus", "2.0.0"), Start: w.startKubelet},
			}},
			{Name: Scheduler, Versions: []upgradesim.Version{
				{Name: "v1", Speaks: speaks("nodehealth", "1.0.0", "extender", "1.0.0"), Start: w.startScheduler},
				{Name: "v2", Speaks: speaks("nodehealth", "2.0.0", "nodehealth", "1.0.0", "extender", "2.0.0", "extender", "1.0.0"), Start: w.startScheduler},
			}},
			{Name: Extender, Versions: []upgradesim.Version{
				{Name: "v1", Speaks: speaks("extender", "1.0.0"), Start: w.startExtender},
				{Name: "v2", Speaks: speaks("extender", "2.0.0", "extender", "1.0.0"), Start: w.startExtender},
			}},
			{Name: LegacyExtender, External: true, Versions: []upgradesim.Version{
				{Name: "v1", Speaks: speaks("extender", "1.0.0"), Start: w.startLegacyExtender},
			}},
		},
		Traffic: []upgradesim.Traffic{
			{From: Kubelet, To: NodeController, Rate: 20, Call: func(ctx context.Context, c *framework.Client) error {
				k := w.kubeletOf(c)
				if k == nil {
					return errors.New("no kubelet holds this client")
				}
				return k.ReportStatus(ctx, 0)
			}},
			{From: Scheduler, To: NodeController, Rate: 10, Call: func(ctx context.Context, c *framework.Client) error {
				s := w.schedulerOf(c)
				if s == nil {
					return errors.New("no scheduler holds this client")
				}
				_, err := s.CheckNode(ctx, "node-000")
				if framework.CodeOf(err) == framework.CodeNotFound {
					return nil // answered: the node controller has not heard of the node yet
				}
				return err
			}},
			{From: Scheduler, To: Extender, Rate: 10, Call: w.filter(Extender)},
			{From: Scheduler, To: LegacyExtender, Rate: 10, Call: w.filter(LegacyExtender)},
		},
		Watches: []upgradesim.Watch{
			{Topic: "NodeHealth@1.0.0", Watcher: Scheduler, Holder: NodeController},
			{Topic: "NodeHealth@2.0.0", Watcher: Scheduler, Holder: NodeController},
		},
		Invariants: []upgradesim.Invariant{
			{Name: "nodes-stay-known", During: func(*upgradesim.Cluster) error {
				now := time.Now()
				var sessions [][]framework.SessionInfo
				for _, n := range w.replicas() {
					sessions = append(sessions, n.Server().Sessions())
				}
				w.heard.sample(now, sessions)
				nc, _ := w.current()
				if nc == nil {
					return nil
				}
				return w.heard.check(nc.Lost())
			}},
			{Name: "every-node-reported", After: func(context.Context, *upgradesim.Cluster) error {
				nc, _ := w.current()
				if nc == nil {
					return errors.New("no node controller replica writes NodeHealth")
				}
				if got := len(nc.Health()); got != w.nodes {
					return fmt.Errorf("the node controller knows %d of %d nodes", got, w.nodes)
				}
				return nil
			}},
			// Before pods-run-where-placed, whose final check stops
			// following pods.
			{Name: "evictions-made-room", During: func(*upgradesim.Cluster) error { return w.loop.checkEvictions(false) },
				After: func(context.Context, *upgradesim.Cluster) error { return w.loop.checkEvictions(true) }},
			{Name: "pods-preempted", After: func(context.Context, *upgradesim.Cluster) error { return w.loop.preempted() }},
			{Name: "pods-run-where-placed", During: func(*upgradesim.Cluster) error {
				w.loop.kubelet(w.kubeletConnected())
				return w.loop.check(false)
			},
				After: func(context.Context, *upgradesim.Cluster) error { return w.loop.check(true) }},
			{Name: "pods-scheduled-after-upgrade", After: func(context.Context, *upgradesim.Cluster) error {
				_, s := w.current()
				if s.Stats().Scheduled.Load() == 0 {
					return fmt.Errorf("the upgraded scheduler placed no pod (unschedulable %d, failed %d)",
						s.Stats().Unschedulable.Load(), s.Stats().Failed.Load())
				}
				return nil
			}},
		},
		BlockedBound: 10 * time.Second,
		SettleBound:  10 * time.Second,
		CallTimeout:  10 * time.Second,
	}
}

// outcomes says what each incarnation of the kubelet, node controller and
// scheduler did, beside the traffic the kit drove.
func (w *world) outcomes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, k := range w.allKubelets {
		st := k.c.Stats()
		out = append(out, fmt.Sprintf("kubelet %s (%d nodes): %d status and %d pod reports acknowledged, %d failed, %d resyncs asked of it; started %d assigned pods, %d ended, %d stopped",
			k.version, k.c.Nodes(), st.StatusReports.Load(), st.PodReports.Load(), st.Failed.Load(), st.Resyncs.Load(),
			st.PodsStarted.Load(), st.PodsEnded.Load(), st.PodsStopped.Load()))
	}
	for _, n := range w.allNCs {
		ready := 0
		for _, h := range n.c.Health() {
			if h.State == nhv2.NodeHealthStateReady {
				ready++
			}
		}
		line := fmt.Sprintf("nodecontroller %s: knew %d nodes (%d ready) when it stopped or the run ended; elected to write NodeHealth %d time(s)",
			n.version, len(n.c.Health()), ready, n.c.Elections())
		if n.version == "v2.1" {
			line += fmt.Sprintf("; %d nodes reported their kernel version (nodestatus 2.1.0)", n.c.KernelVersions())
		}
		out = append(out, line)
	}
	out = append(out, w.heard.outcome(), w.loop.outcome(), w.loop.preemptionOutcome())
	for _, s := range w.allSchedulers {
		st := s.c.Stats()
		out = append(out, fmt.Sprintf("scheduler %s: %d pods scheduled (%d by preempting %d pods), %d unschedulable, %d failed (its own loop, 10 pods/s)",
			s.version, st.Scheduled.Load(), st.Preempted.Load(), st.Victims.Load(), st.Unschedulable.Load(), st.Failed.Load()))
	}
	return out
}

// kernelsReported holds once a node controller heard a node's kernel
// version: a v2.1 kubelet and a v2.1 node controller agreed on nodestatus
// 2.1.0, the minor version's additive member reaching its reader.
func (w *world) kernelsReported() upgradesim.Condition {
	return upgradesim.Condition{Name: "a kernel version reported", Holds: func(*upgradesim.Cluster) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for n := range w.ncs {
			if n.KernelVersions() > 0 {
				return nil
			}
		}
		return errors.New("no node controller running heard a node's kernel version")
	}}
}
