// Package nodecontroller is the sample's node controller: the server of
// nodestatus (from every node's kubelet) and of nodehealth (to the
// scheduler). It keeps the last status of every node, treats a node's
// session as its liveness (a node whose kubelet holds no session for
// longer than a grace period is Unknown), asks a kubelet for a full resync
// when it lacks the node's status (after its own restart, say), and
// publishes the processed health of every node as the NodeHealth topic.
// It also plays the part of Kubernetes' API server for pods: the scheduler
// binds a pod to a node with Bind (nodehealth), the node controller
// publishes the binding as the PodAssignment topic (nodestatus) that each
// node's kubelet watches, and the kubelet reports the pod's status back
// through ReportPodStatuses.
package nodecontroller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep-dev/lockstep/framework"
	nhv1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	nsv21 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2_1"
)

// Config configures a [NodeController].
type Config struct {
	// API is the contract generation it serves, "v1" (nodestatus and
	// nodehealth 1.0.0), "v2" (2.0.0) or "v2.1" (nodestatus 2.1.0, which
	// adds a node's kernel version and serves 2.0.0 too, with no fork
	// mode: it derives from 2.0.0 compatibly; nodehealth 2.0.0); with
	// Fork, v2 also serves 1.0.0 by conversion and publishes NodeHealth in
	// both forms.
	API  string
	Fork bool
	// NodeGrace is how long a node's kubelet may hold no session before the
	// node's state becomes Unknown; default 5s. An upgrade of the kubelet
	// that takes less does not disturb the node's health.
	NodeGrace time.Duration
	// Clock measures the nodes' grace periods; default the real clock.
	Clock clockwork.Clock
	// ResyncAfter is how long a new kubelet session may go without
	// reporting its node before the node controller asks it for a full
	// resync; default 500ms.
	ResyncAfter time.Duration
	// NodesPerSession, MaxStatusBytes and MaxPodBytes bound what one
	// kubelet session may make the node controller store, PodsPerNode the
	// pods bound to one node; defaults DefaultNodesPerSession,
	// DefaultPodsPerNode, DefaultMaxStatusBytes and DefaultMaxPodBytes. See
	// [NodeController.Authorize].
	NodesPerSession int
	PodsPerNode     int
	MaxStatusBytes  int
	MaxPodBytes     int
	// NodeSets grants node simulators, under mutual TLS, the nodes whose
	// names begin with a prefix: NodeSets["sim-a"] = "sim-a-" lets the
	// identity lockstep://kubelet/sim-a report every node named sim-a-…,
	// and no other identity report them. Every other node belongs to the
	// identity that names it, lockstep://kubelet/<node>. See
	// [NodeController.Authorize].
	NodeSets map[string]string
	// Server is the lockstep server's configuration (component, release,
	// logger, observer, interceptors); the node controller adds its peer
	// hooks and its authorizer (after Server.Authorizer, if set), and
	// requires a kubelet session for readiness.
	Server framework.ServerConfig
	// Applied, if set, is called where a handler commits a call's effect.
	Applied func(ctx context.Context)
	// Registerer, if set, receives the node controller's own metrics.
	Registerer prometheus.Registerer
	// Logger receives its logs; default slog.Default().
	Logger *slog.Logger
	// Lease, if set, makes the node controller one of several replicas:
	// every replica serves kubelets and computes every node's health, but
	// only the one holding the lease has its NodeHealth and PodAssignment
	// writers attached, so schedulers' and kubelets' informers watch it
	// (docs/topics.md, writer-aware routing); the others keep theirs
	// detached and up to date, ready to take over. Replicas share Pods.
	// Nil: the only node controller, always writing.
	Lease Lease
	// LeaseTTL is how long the lease lasts unrenewed; it is renewed every
	// third of it. Default 1s.
	LeaseTTL time.Duration
	// Pods is the record of bound pods, shared by replicas; nil for one of
	// the node controller's own (right for a single node controller).
	Pods *PodStore
	// Liveness, if set, is the record of which replicas hear each node's
	// kubelet, shared by replicas: a node's grace period then ends in
	// Unknown only once no replica has held a session of its kubelet for
	// NodeGrace. Nil: the replica judges by its own sessions.
	Liveness *Liveness
	// OnHealth, if set, is called with every node's health each time it
	// changes and was published, under the node controller's lock: it must not block nor
	// modify h. It is how the user-visible subset reaches Node objects
	// (package nodeobjects) while heartbeats and statuses stay here.
	OnHealth func(h *nhv2.NodeHealth)
	// HealthTopic are options of the NodeHealth topic(s) beyond the node
	// controller's own, such as their bounds ([framework.WithMaxKeys],
	// [framework.WithMaxKeysPerWriter]): a kubelet's report publishes its
	// node's health on its behalf, so each kubelet identity holds at most
	// its share of the topic, and a report beyond it is refused.
	HealthTopic []framework.TopicOption
	// PodTopic are options of the PodAssignment topic(s) beyond the node
	// controller's own, such as their bounds: the topic holds one key per
	// bound pod, so a cluster with more pods than [framework.DefaultTopicMaxKeys]
	// raises [framework.WithMaxKeys] (and [framework.WithMaxBytes]) here,
	// or a binding whose assignment the topic cannot hold is refused with
	// the topic's resource_exhausted, and the pod is not bound.
	PodTopic []framework.TopicOption
	// Evicted, if set, is called with every eviction that unbound pods
	// (Evict, for preemption), once they are unbound.
	Evicted func(Eviction)
}

// Eviction is one Evict call that unbound pods: the node, the pods
// unbound, the pod they made room for (bound there in the same step),
// and what was left of the node's allocatable resources just before, and
// with what the victims requested given back (After).
type Eviction struct {
	Node          string
	Victims       []Pod
	Preemptor     nhv2.Preemptor
	Before, After nhv2.Resources
	At            time.Time
}

// NodeController holds the nodes' status and health.
type NodeController struct {
	cfg    Config
	srv    *framework.Server
	logger *slog.Logger

	mu        sync.Mutex
	nodes     map[string]*node
	instances map[string]string          // kubelet session instance → node name
	bound     map[string]map[string]bool // kubelet session instance → the nodes bound to it
	// published is the PodAssignment last published for each mirrored
	// pod: its node, so that a pod's change finds the node it leaves
	// without looking at every node, and the assignment itself, so that a
	// change that leaves it as it was (a phase its kubelet reported) is
	// not published again, which would send the kubelet's watch an event
	// for nothing.
	published map[string]nsv2.PodAssignment
	// lapsed is the node each kubelet session instance that lost its
	// session had reported last, so that the instance's next session
	// finds its node without looking at every node.
	lapsed  map[string]string
	closed  bool
	topicV1 *framework.TopicWriter[nhv1.NodeHealth]
	topicV2 *framework.TopicWriter[nhv2.NodeHealth]
	// podsV1 and podsV2 are the PodAssignment topic in the forms served;
	// in fork mode podsV1 is nil and the 1.0.0 form follows podsV2.
	podsV1 *framework.TopicWriter[nsv1.PodAssignment]
	podsV2 *framework.TopicWriter[nsv2.PodAssignment]
	// podsV21 is the topic at v2.1; its 2.0.0 form follows it.
	podsV21   *framework.TopicWriter[nsv21.PodAssignment]
	unwatch   func()        // ends the mirroring of cfg.Pods
	leader    bool          // its writers are attached
	elections int           // how many times it took the lease
	stop      chan struct{} // ends the election loop
	elected   chan struct{} // closed when the election loop ended
	learnt    chan struct{} // a kubelet session's node became known: the election looks again

	reports *prometheus.CounterVec
	resyncs prometheus.Counter
	resumes prometheus.Counter
}

// node is what the node controller knows of one node.
type node struct {
	name     string
	instance string // the kubelet session that reported it last
	// boundTo is the kubelet session allowed to report the node: the
	// first to report it, until that session is lost.
	boundTo string
	// assigned are the pods bound to the node, with their requests and
	// priorities, as mirrored from the pod store.
	assigned map[string]nhv2.BoundPod
	status   *nsv2.NodeStatus
	// kernel is the kernel version its 2.1.0 kubelet reported, if any.
	kernel string
	// lost is when the node's kubelet lost its session (zero while it
	// holds one), and grace the timer of its grace period; unknown is set
	// once the grace period passed since, at unknownAt (on Config.Clock).
	lost      time.Time
	grace     clockwork.Timer
	unknown   bool
	unknownAt time.Time
	health    *nhv2.NodeHealth // as last published
}

// New builds a node controller and its lockstep server, not yet serving.
func New(cfg Config) (*NodeController, error) {
	if cfg.API != "v1" && cfg.API != "v2" && cfg.API != "v2.1" {
		return nil, fmt.Errorf("nodecontroller: API %q: want v1, v2 or v2.1", cfg.API)
	}
	if cfg.Fork && cfg.API != "v2" {
		return nil, errors.New("nodecontroller: fork mode needs API v2")
	}
	if cfg.NodeGrace <= 0 {
		cfg.NodeGrace = 5 * time.Second
	}
	if cfg.ResyncAfter <= 0 {
		cfg.ResyncAfter = 500 * time.Millisecond
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodesPerSession <= 0 {
		cfg.NodesPerSession = DefaultNodesPerSession
	}
	if cfg.PodsPerNode <= 0 {
		cfg.PodsPerNode = DefaultPodsPerNode
	}
	if cfg.MaxStatusBytes <= 0 {
		cfg.MaxStatusBytes = DefaultMaxStatusBytes
	}
	if cfg.MaxPodBytes <= 0 {
		cfg.MaxPodBytes = DefaultMaxPodBytes
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = time.Second
	}
	if cfg.Pods == nil {
		cfg.Pods = NewPodStore()
	}
	n := &NodeController{cfg: cfg, logger: cfg.Logger, nodes: map[string]*node{}, instances: map[string]string{},
		bound: map[string]map[string]bool{}, published: map[string]nsv2.PodAssignment{}, lapsed: map[string]string{},
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sample_nodecontroller_reports_total",
			Help: "Reports received from kubelets, by kind (status, pod) and the contract version they travelled at.",
		}, []string{"kind", "version"}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sample_nodecontroller_resyncs_requested_total",
			Help: "Full resyncs asked of kubelet sessions that had not reported their node.",
		}),
		resumes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sample_nodecontroller_resumes_total",
			Help: "Nodes held Unknown that their kubelet instance's new session made known again without a full resync.",
		}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(n.reports, n.resyncs, n.resumes, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sample_nodecontroller_nodes",
			Help: "Nodes the node controller knows.",
		}, func() float64 { return float64(len(n.Health())) }))
	}
	scfg := cfg.Server
	scfg.RequirePeers = append(scfg.RequirePeers, nsv1.Contract.Name())
	scfg.OnPeerJoined = n.peerJoined
	scfg.OnPeerLost = n.peerLost
	if user := scfg.Authorizer; user != nil {
		scfg.Authorizer = framework.AuthorizerFunc(func(ctx context.Context, e *framework.Entry) error {
			if err := user.Authorize(ctx, e); err != nil {
				return err
			}
			return n.Authorize(ctx, e)
		})
	} else {
		scfg.Authorizer = framework.AuthorizerFunc(n.Authorize)
	}
	srv, err := framework.NewServer(scfg)
	if err != nil {
		return nil, err
	}
	n.srv = srv
	var topicOpts []framework.TopicOption
	if cfg.Lease != nil {
		topicOpts = append(topicOpts, framework.WithWriterDetached())
	}
	healthOpts := append(append([]framework.TopicOption(nil), topicOpts...), cfg.HealthTopic...)
	podOpts := append(append([]framework.TopicOption(nil), topicOpts...), cfg.PodTopic...)
	if cfg.API == "v1" {
		nsv1.Register(srv, statusV1{n})
		nhv1.Register(srv, healthV1{n})
		n.topicV1 = framework.ServeTopic[nhv1.NodeHealth](srv, nhv1.Contract, "NodeHealth", healthOpts...)
		n.podsV1 = nsv1.ServePodAssignment(srv, podOpts...)
	} else if cfg.API == "v2.1" {
		// 2.1.0 derives from 2.0.0 compatibly: Register and
		// ServePodAssignment serve 2.0.0 kubelets too.
		nsv21.Register(srv, statusV21{n})
		nhv2.Register(srv, healthV2{n})
		n.topicV2 = framework.ServeTopic[nhv2.NodeHealth](srv, nhv2.Contract, "NodeHealth", healthOpts...)
		n.podsV21 = nsv21.ServePodAssignment(srv, podOpts...)
	} else {
		nsv2.Register(srv, statusV2{n})
		nhv2.Register(srv, healthV2{n})
		n.topicV2 = framework.ServeTopic[nhv2.NodeHealth](srv, nhv2.Contract, "NodeHealth", healthOpts...)
		n.podsV2 = nsv2.ServePodAssignment(srv, podOpts...)
		if cfg.Fork {
			nsv2.ServeV1(srv) // PodAssignment at 1.0.0 too, from n.podsV2
			nhv2.ServeV1(srv)
			n.topicV1 = framework.ServeTopic[nhv1.NodeHealth](srv, nhv1.Contract, "NodeHealth", healthOpts...)
		}
	}
	n.unwatch = cfg.Pods.subscribe(n.podChanged)
	if cfg.Lease != nil {
		n.stop, n.elected, n.learnt = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
		go n.elect()
	}
	return n, nil
}

// elect takes part in the election among replicas until Close: it takes or
// renews the lease every third of its TTL, attaching the NodeHealth writers
// while it holds it and detaching them when it does not. Once its server
// begins to drain it gives the lease up and competes no more.
func (n *NodeController) elect() {
	defer close(n.elected)
	id := n.srv.Instance()
	started := time.Now()
	var caughtUpAt time.Time // since when it has caught up without leading
	tick := time.NewTicker(n.cfg.LeaseTTL / 3)
	defer tick.Stop()
	for {
		// A replica competes once it has caught up: a leader that knew
		// less than the one it replaces would make every watcher see
		// nodes vanish. A leader renews whatever it knows, and says
		// whether it hears any kubelet, so that a caught-up replica takes
		// over from a leader that hears none (Claim); it does so as soon
		// as it has caught up, without waiting a TTL for kubelets to
		// arrive as it does for a free lease, since that leader's nodes
		// become Unknown when their grace period ends.
		// It takes over from a leader that hears no kubelet only once it
		// knows as many nodes as that leader does, or half the nodes' grace
		// period after it first could (Claim.Nodes).
		sessions, caughtUp := n.standing()
		claim := Claim{Holder: id, TTL: n.cfg.LeaseTTL, HearsKubelets: sessions > 0, Nodes: len(n.Health())}
		if !caughtUp || n.Leader() {
			caughtUpAt = time.Time{}
		} else if caughtUpAt.IsZero() {
			caughtUpAt = time.Now()
		}
		if n.Leader() || caughtUp {
			claim.TakeOver = !n.Leader() && time.Since(started) < n.cfg.LeaseTTL
			claim.Overdue = !caughtUpAt.IsZero() && time.Since(caughtUpAt) >= n.cfg.NodeGrace/2
			held, err := n.cfg.Lease.Acquire(claim)
			if err != nil {
				n.logger.Warn("lease", "err", err)
			}
			n.setLeader(held && err == nil)
		}
		select {
		case <-tick.C:
		case <-n.learnt:
		case <-n.srv.DrainStarted():
			// The lease goes before the drain does: a drain can take
			// seconds on a loaded machine, longer than the nodes' grace
			// period, and a leader that drains hears no kubelet, so
			// holding on would make it, not the replica that takes over,
			// the writer that marks the nodes Unknown.
			n.resign(id)
			<-n.stop
			return
		case <-n.stop:
			n.resign(id)
			return
		}
	}
}

// resign detaches the writers and gives the lease up.
func (n *NodeController) resign(id string) {
	n.setLeader(false)
	if err := n.cfg.Lease.Release(id); err != nil {
		n.logger.Warn("releasing the lease", "err", err)
	}
}

// standing counts the kubelet sessions the replica holds and reports
// whether it has caught up: it knows the node of every one of them, and
// holds one, the state a new leader must have.
func (n *NodeController) standing() (sessions int, caughtUp bool) {
	all := n.srv.Sessions() // before n.mu: the server calls peer hooks, which take n.mu
	n.mu.Lock()
	defer n.mu.Unlock()
	caughtUp = true
	for _, s := range all {
		if s.Contract != nsv1.Contract.Name() {
			continue
		}
		sessions++
		if _, known := n.instances[s.Peer.Instance]; !known {
			caughtUp = false
		}
	}
	return sessions, caughtUp && sessions > 0
}

// setLeader attaches or detaches the NodeHealth and PodAssignment
// writers. A replica that takes over already holds every node's health and
// every pod's assignment: it computed them all along (the assignments from
// the shared pod store), into its detached writers.
func (n *NodeController) setLeader(lead bool) {
	n.mu.Lock()
	changed := n.leader != lead
	n.leader = lead
	if changed && lead {
		n.elections++
	}
	n.mu.Unlock()
	if !changed {
		return
	}
	// A forked form of PodAssignment attaches and detaches with podsV2.
	for _, w := range []attachable{n.topicV1, n.topicV2, n.podsV1, n.podsV2, n.podsV21} {
		switch {
		case reflect.ValueOf(w).IsNil():
		case lead:
			w.Attach()
		default:
			w.Detach()
		}
	}
	n.logger.Info("node health and pod assignment writers", "leader", lead, "instance", n.srv.Instance())
}

// attachable is a topic writer that attaches and detaches.
type attachable interface {
	Attach()
	Detach()
}

// Elections returns how many times this replica took the lease.
func (n *NodeController) Elections() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.elections
}

// Leader reports whether this replica writes NodeHealth: it holds the
// lease, or runs without one.
func (n *NodeController) Leader() bool {
	if n.cfg.Lease == nil {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader
}

// Server returns the lockstep server, to serve.
func (n *NodeController) Server() *framework.Server { return n.srv }

// TopicV1 and TopicV2 return the NodeHealth topic in each form the node
// controller publishes, or nil for a form it does not.
func (n *NodeController) TopicV1() *framework.TopicWriter[nhv1.NodeHealth] { return n.topicV1 }

// TopicV2 is [NodeController.TopicV1] for 2.0.0.
func (n *NodeController) TopicV2() *framework.TopicWriter[nhv2.NodeHealth] { return n.topicV2 }

// Close stops the grace timers' effects and, for a replica, leaves the
// election, giving the lease up; the server is stopped by whoever serves
// it.
func (n *NodeController) Close() {
	n.mu.Lock()
	already := n.closed
	n.closed = true
	n.mu.Unlock()
	if !already {
		n.unwatch()
		if n.cfg.Liveness != nil {
			n.cfg.Liveness.leave(n.srv.Instance(), n.cfg.Clock.Now())
		}
	}
	if n.stop != nil && !already {
		close(n.stop)
		<-n.elected
	}
}

// Health returns every node's health as last published, sorted by name.
func (n *NodeController) Health() []nhv2.NodeHealth {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]nhv2.NodeHealth, 0, len(n.nodes))
	for _, nd := range n.nodes {
		if nd.health != nil {
			out = append(out, *nd.health)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeName < out[j].NodeName })
	return out
}

// IsLost reports whether it holds the node Unknown, and since when (on
// Config.Clock); unlike Lost it looks at that node only.
func (n *NodeController) IsLost(name string) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if nd := n.nodes[name]; nd != nil && nd.unknown {
		return nd.unknownAt, true
	}
	return time.Time{}, false
}

// Lost returns the nodes it holds Unknown, each with when its grace period
// ended (on Config.Clock): what a check of its verdicts compares with when
// the node's kubelet was last heard.
func (n *NodeController) Lost() map[string]time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]time.Time{}
	for _, nd := range n.nodes {
		if nd.unknown {
			out[nd.name] = nd.unknownAt
		}
	}
	return out
}

func (n *NodeController) applied(ctx context.Context) {
	if n.cfg.Applied != nil {
		n.cfg.Applied(ctx)
	}
}

func callVersion(ctx context.Context) string {
	if call := framework.CallFromContext(ctx); call != nil {
		return call.Version
	}
	return ""
}

func callInstance(ctx context.Context) string {
	if call := framework.CallFromContext(ctx); call != nil {
		return call.Peer.Instance
	}
	return ""
}

// reportStatus stores a node's whole status, reported by the kubelet
// session instance.
func (n *NodeController) reportStatus(ctx context.Context, st *nsv2.NodeStatus) (*nsv2.Ack, error) {
	n.reports.WithLabelValues("status", callVersion(ctx)).Inc()
	instance := callInstance(ctx)
	n.mu.Lock()
	defer n.mu.Unlock()
	nd := n.nodeLocked(st.NodeName)
	if nd.instance != "" && nd.instance != instance {
		delete(n.instances, nd.instance)
		delete(n.lapsed, nd.instance)
	}
	endGraceLocked(nd)
	nd.instance, nd.status, nd.unknown, nd.unknownAt = instance, st, false, time.Time{}
	if _, known := n.instances[instance]; !known && n.learnt != nil {
		select {
		case n.learnt <- struct{}{}:
		default:
		}
	}
	n.instances[instance] = st.NodeName
	if n.cfg.Liveness != nil {
		n.cfg.Liveness.learn(instance, st.NodeName)
	}
	if err := n.publishLocked(ctx, nd); err != nil {
		return nil, err
	}
	n.applied(ctx)
	return &nsv2.Ack{Accepted: true}, nil
}

// reportPod records one pod's status in the pod store. A pod of a node
// whose status the node controller lacks makes it ask the kubelet for a
// resync.
func (n *NodeController) reportPod(ctx context.Context, p *nsv2.PodStatus) (*nsv2.Ack, error) {
	n.reports.WithLabelValues("pod", callVersion(ctx)).Inc()
	if err := n.cfg.Pods.report(p); err != nil {
		return nil, err
	}
	n.mu.Lock()
	if nd := n.nodes[p.NodeName]; nd == nil || nd.status == nil {
		n.requestResyncLocked(callInstance(ctx))
	}
	n.mu.Unlock()
	n.applied(ctx)
	return &nsv2.Ack{Accepted: true}, nil
}

// bind binds a pod to a node the node controller knows.
func (n *NodeController) bind(ctx context.Context, b *nhv2.Binding) (*nhv2.BindResult, error) {
	n.mu.Lock()
	nd := n.nodes[b.NodeName]
	known := nd != nil && nd.status != nil
	n.mu.Unlock()
	if !known {
		return nil, framework.Errorf(framework.CodeNotFound, "no node %s", b.NodeName)
	}
	p, err := n.cfg.Pods.bind(b, n.cfg.PodsPerNode)
	if err != nil {
		return nil, err
	}
	n.applied(ctx)
	return &nhv2.BindResult{NodeName: p.NodeName}, nil
}

// evict unbinds pods from a node the node controller knows, to make room
// for a pod of higher priority, binds that pod there, and reports the
// eviction.
func (n *NodeController) evict(ctx context.Context, e *nhv2.Eviction) (*nhv2.EvictResult, error) {
	n.mu.Lock()
	nd := n.nodes[e.NodeName]
	known := nd != nil && nd.status != nil && nd.health != nil
	var before nhv2.Resources
	if known {
		before = nd.health.Allocatable
	}
	n.mu.Unlock()
	if !known {
		return nil, framework.Errorf(framework.CodeNotFound, "no node %s", e.NodeName)
	}
	evicted, err := n.cfg.Pods.evict(e, n.cfg.PodsPerNode)
	if err != nil && len(evicted) == 0 {
		return nil, err
	}
	after := before
	res := &nhv2.EvictResult{Evicted: []string{}}
	for _, p := range evicted {
		res.Evicted = append(res.Evicted, p.UID)
		after.CPUMillis, after.MemoryBytes, after.Pods = after.CPUMillis+p.Requests.CPUMillis, after.MemoryBytes+p.Requests.MemoryBytes, after.Pods+1
	}
	if len(evicted) > 0 {
		n.logger.Info("pods evicted for a pod of higher priority", "node", e.NodeName, "evicted", res.Evicted,
			"preemptor", e.Preemptor.Pod.Namespace+"/"+e.Preemptor.Pod.Name, "priority", e.Preemptor.Priority)
		if n.cfg.Evicted != nil {
			n.cfg.Evicted(Eviction{Node: e.NodeName, Victims: evicted, Preemptor: e.Preemptor, Before: before, After: after, At: time.Now()})
		}
	}
	if err != nil {
		return nil, err // unbound, but not kept in the store's file: the call may be sent again
	}
	n.applied(ctx)
	return res, nil
}

// podChanged mirrors a change of the pod store: the node's assigned pods,
// its health (what is left of its allocatable resources), and the
// PodAssignment topic. The store calls it in order, under its lock. It
// returns the topic's refusal of a pod's assignment (a topic holding its
// bound of keys), which undoes a new pod's binding (PodStore.newLocked).
func (n *NodeController) podChanged(uid string, p *Pod) error {
	if p != nil && p.Ended() {
		p = nil // gone: its kubelet reported it ended
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	was, had := n.published[uid]
	if had && (p == nil || p.NodeName != was.NodeName) {
		delete(n.published, uid)
		if nd := n.nodes[was.NodeName]; nd != nil {
			delete(nd.assigned, uid)
			n.publishOwnLocked(nd)
		}
	}
	if p != nil {
		nd := n.nodeLocked(p.NodeName)
		bp := p.bound()
		if old, ok := nd.assigned[uid]; !ok || old != bp {
			nd.assigned[uid] = bp
			n.publishOwnLocked(nd)
		}
		a := p.assignment()
		if had && was == *a {
			return nil // what its kubelet watches is as it was
		}
		n.published[uid] = *a
	} else if !had {
		return nil // never published
	}
	var err error
	switch {
	case p == nil && n.podsV21 != nil:
		err = n.podsV21.Delete(uid)
	case n.podsV21 != nil:
		up := new(nsv21.PodAssignment)
		if err = nsv21.Convert_v2_PodAssignment_To_v2_1_PodAssignment(p.assignment(), up); err == nil {
			err = n.podsV21.Set(up)
		}
	case p == nil && n.podsV2 != nil:
		err = n.podsV2.Delete(uid)
	case p == nil:
		err = n.podsV1.Delete(uid)
	case n.podsV2 != nil:
		err = n.podsV2.Set(p.assignment())
	default:
		var down *nsv1.PodAssignment
		if down, err = nsv2.PodAssignmentToV1(p.assignment()); err == nil {
			err = n.podsV1.Set(down)
		}
	}
	if err == nil {
		return nil
	}
	n.logger.Warn("publishing a pod assignment", "uid", uid, "err", err)
	if p == nil {
		return nil
	}
	// Not published as it is: the pod's next change publishes it whatever
	// it is (the node is kept, for the pod's leaving).
	n.published[uid] = nsv2.PodAssignment{NodeName: p.NodeName}
	return err
}

// Pods returns every bound pod, with the phases its kubelet reported.
func (n *NodeController) Pods() []Pod { return n.cfg.Pods.Pods() }

// PodStore returns the record of bound pods.
func (n *NodeController) PodStore() *PodStore { return n.cfg.Pods }

// checkNode answers one node's health now.
func (n *NodeController) checkNode(ctx context.Context, ref *nhv2.NodeRef) (*nhv2.NodeHealth, error) {
	n.applied(ctx)
	n.mu.Lock()
	defer n.mu.Unlock()
	nd := n.nodes[ref.NodeName]
	if nd == nil || nd.health == nil {
		return nil, framework.Errorf(framework.CodeNotFound, "no node %s", ref.NodeName)
	}
	h := *nd.health
	return &h, nil
}

func (n *NodeController) nodeLocked(name string) *node {
	nd := n.nodes[name]
	if nd == nil {
		nd = &node{name: name, assigned: map[string]nhv2.BoundPod{}}
		n.nodes[name] = nd
	}
	return nd
}

// peerJoined gives a new kubelet session ResyncAfter to report its node,
// then asks it for a full resync. A session of the kubelet instance that
// reported a node last resumes the node instead (see rejoined): the
// node's kubelet holds a session again (its last one lapsed, say, while
// the machine was too loaded for its heartbeats), though its next report
// may go to another replica.
func (n *NodeController) peerJoined(info framework.SessionInfo) {
	if info.Contract != nsv1.Contract.Name() {
		return
	}
	if n.cfg.Liveness != nil {
		n.cfg.Liveness.hold(info.Peer.Instance, n.srv.Instance(), n.cfg.Clock.Now())
	}
	n.rejoined(info.Peer.Instance)
	n.resyncUnlessKnown(info.Peer.Instance)
}

// rejoined undoes what peerLost did, when the kubelet instance that
// reported a node last opens a session again: the node is bound to it
// again and its grace period ends; a node held Unknown since (the grace
// period passed) is what its last status says again, and published so.
// The instance is the same kubelet process, so no full resync is asked:
// the node controller holds its last status, and what the kubelet could
// not report while it had no session is still pending on its side, sent
// with its next report. A lapse (the machine too loaded for the
// heartbeats, say) then costs a handshake, not a handshake and a whole
// status with every pod's, which on a starved machine would make the
// next lapses likelier. A new kubelet instance (a restart) is asked for
// a full resync, as before.
func (n *NodeController) rejoined(instance string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.lapsed[instance]
	if !ok {
		return
	}
	delete(n.lapsed, instance)
	nd := n.nodes[name]
	if nd == nil || nd.instance != instance || nd.status == nil || nd.boundTo != "" || (nd.lost.IsZero() && !nd.unknown) {
		return
	}
	unknown := nd.unknown
	endGraceLocked(nd)
	nd.unknown, nd.unknownAt = false, time.Time{}
	n.instances[instance] = nd.name
	n.bindLocked(nd, instance)
	if unknown {
		n.resumes.Inc()
		n.publishOwnLocked(nd)
	}
}

// resyncUnlessKnown asks a kubelet session for a full resync after
// ResyncAfter unless it reported its node by then. A replica asks again
// until it has the node: the kubelet's calls go to one replica each, so its
// resync may reach another one.
func (n *NodeController) resyncUnlessKnown(instance string) {
	time.AfterFunc(n.cfg.ResyncAfter, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if _, known := n.instances[instance]; known || n.closed {
			return
		}
		if n.requestResyncLocked(instance) && n.cfg.Lease != nil {
			n.resyncUnlessKnown(instance)
		}
	})
}

// requestResyncLocked asks a kubelet session for a full resync; it reports
// whether the session exists.
func (n *NodeController) requestResyncLocked(instance string) bool {
	if instance == "" || !n.srv.RequestResync(nsv1.Contract.Name(), instance) {
		return false
	}
	n.resyncs.Inc()
	n.logger.Debug("asked a kubelet for a full resync", "instance", instance)
	return true
}

// peerLost starts a node's grace period when its kubelet's session ends.
func (n *NodeController) peerLost(info framework.SessionInfo) {
	if info.Contract != nsv1.Contract.Name() {
		return
	}
	if n.cfg.Liveness != nil {
		n.cfg.Liveness.release(info.Peer.Instance, n.srv.Instance(), n.cfg.Clock.Now())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unbindLocked(info.Peer.Instance)
	name, ok := n.instances[info.Peer.Instance]
	if !ok {
		return
	}
	delete(n.instances, info.Peer.Instance)
	nd := n.nodes[name]
	if nd == nil || nd.instance != info.Peer.Instance {
		return
	}
	n.lapsed[info.Peer.Instance] = name
	lost := n.cfg.Clock.Now()
	endGraceLocked(nd)
	nd.lost = lost
	n.graceLocked(nd, lost, n.cfg.NodeGrace)
}

// graceLocked runs the rest of a node's grace period, which began when
// its kubelet's session was lost at lost: after wait, unless the kubelet
// held a session again by then, the node becomes Unknown, or, with a
// Liveness, its grace period goes on for as long as another replica hears
// the kubelet, and for NodeGrace after the last one stopped.
func (n *NodeController) graceLocked(nd *node, lost time.Time, wait time.Duration) {
	nd.grace = n.cfg.Clock.AfterFunc(wait, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !nd.lost.Equal(lost) || n.closed {
			return
		}
		if n.cfg.Liveness != nil {
			if left := n.cfg.Liveness.graceLeft(nd.name, n.cfg.NodeGrace, n.cfg.Clock.Now()); left > 0 {
				n.graceLocked(nd, lost, left)
				return
			}
		}
		nd.unknown, nd.unknownAt = true, n.cfg.Clock.Now()
		n.logger.Info("node lost: its kubelet held no session for the grace period", "node", nd.name, "grace", n.cfg.NodeGrace)
		n.publishOwnLocked(nd)
	})
}

// endGraceLocked ends a node's grace period, if one runs: its kubelet
// holds a session again.
func endGraceLocked(nd *node) {
	if nd.grace != nil {
		nd.grace.Stop()
		nd.grace = nil
	}
	nd.lost = time.Time{}
}

// publishLocked recomputes a node's health and writes it to the topic(s)
// when it changed, on behalf of ctx ([framework.TopicWriter.SetFor]). ctx
// is the request of the kubelet whose report changed it, so the key counts
// against that kubelet's share of the topic and the change carries the
// request's trace context to the watchers; where no request changed it (a
// grace period's end, a binding) ctx is context.Background(), which
// carries no peer: the node controller's own write, as with Set. A refused write is returned, and
// the health is not recorded as published, so that the next change or
// report of the node writes it again; without a request to return it to,
// the caller logs it.
func (n *NodeController) publishLocked(ctx context.Context, nd *node) error {
	h := health(nd)
	if h == nil || reflect.DeepEqual(h, nd.health) || n.closed {
		return nil
	}
	if n.topicV2 != nil {
		if err := n.topicV2.SetFor(ctx, h); err != nil {
			return fmt.Errorf("publishing the health of node %s: %w", nd.name, err)
		}
	}
	if n.topicV1 != nil {
		down, err := nhv2.NodeHealthToV1(h)
		if err == nil {
			err = n.topicV1.SetFor(ctx, down)
		}
		if err != nil {
			return fmt.Errorf("publishing the health of node %s at 1.0.0: %w", nd.name, err)
		}
	}
	nd.health = h
	if n.cfg.OnHealth != nil {
		n.cfg.OnHealth(h)
	}
	return nil
}

// publishOwnLocked is publishLocked where no request changed the health:
// a refused write is logged.
func (n *NodeController) publishOwnLocked(nd *node) {
	if err := n.publishLocked(context.Background(), nd); err != nil {
		n.logger.Warn("publishing node health", "node", nd.name, "err", err)
	}
}

// health is what the scheduler may know of a node: its state, whether it
// takes new pods and why not, and what is left of its allocatable
// resources for pods. Nil until its status is known.
func health(nd *node) *nhv2.NodeHealth {
	st := nd.status
	if st == nil {
		return nil
	}
	h := &nhv2.NodeHealth{NodeName: nd.name, State: nhv2.NodeHealthStateUnknown}
	switch st.Conditions.Ready.Status {
	case nsv2.ConditionStatusTrue:
		h.State = nhv2.NodeHealthStateReady
	case nsv2.ConditionStatusFalse:
		h.State = nhv2.NodeHealthStateNotReady
	}
	var reasons []string
	switch {
	case nd.unknown:
		h.State = nhv2.NodeHealthStateUnknown
		reasons = append(reasons, "NodeLost: the kubelet's session was lost")
	case h.State != nhv2.NodeHealthStateReady:
		reasons = append(reasons, "NotReady")
	}
	var cpu, memory int64
	for _, p := range nd.assigned {
		cpu, memory = cpu+p.Requests.CPUMillis, memory+p.Requests.MemoryBytes
		h.Pods = append(h.Pods, p)
	}
	sort.Slice(h.Pods, func(i, j int) bool { return h.Pods[i].Pod.UID < h.Pods[j].Pod.UID })
	h.Allocatable = nhv2.Resources{CPUMillis: max(0, st.Allocatable.CPUMillis-cpu), MemoryBytes: max(0, st.Allocatable.MemoryBytes-memory),
		Pods: max(0, st.Allocatable.Pods-int64(len(nd.assigned)))}
	describe(h, st)
	for _, c := range []struct {
		name string
		cond *nsv2.Condition
	}{{"MemoryPressure", st.Conditions.MemoryPressure}, {"DiskPressure", st.Conditions.DiskPressure}, {"PIDPressure", st.Conditions.PidPressure}} {
		if c.cond != nil && c.cond.Status == nsv2.ConditionStatusTrue {
			reasons = append(reasons, c.name)
		}
	}
	if st.Unschedulable != nil && *st.Unschedulable {
		reasons = append(reasons, "Unschedulable")
	}
	if h.Allocatable.Pods == 0 {
		reasons = append(reasons, "PodsFull")
	}
	h.Schedulable = len(reasons) == 0
	if len(reasons) > 0 {
		r := strings.Join(reasons, ", ")
		h.Reason = &r
	}
	return h
}

// statusV2 serves nodestatus 2.0.0.
type statusV2 struct{ n *NodeController }

// ReportStatus stores a node's status.
func (s statusV2) ReportStatus(ctx context.Context, st *nsv2.NodeStatus) (*nsv2.Ack, error) {
	return s.n.reportStatus(ctx, st)
}

// ReportPodStatuses stores one pod's status.
func (s statusV2) ReportPodStatuses(ctx context.Context, p *nsv2.PodStatus) (*nsv2.Ack, error) {
	return s.n.reportPod(ctx, p)
}

// statusV21 serves nodestatus 2.1.0 (and, through the generated
// conversions, 2.0.0): its messages are read into the node controller's
// model, which is 2.0.0's, and the kernel version 2.1.0 adds is kept
// beside it.
type statusV21 struct{ n *NodeController }

// ReportStatus stores a node's status and its kernel version.
func (s statusV21) ReportStatus(ctx context.Context, st *nsv21.NodeStatus) (*nsv21.Ack, error) {
	down := new(nsv2.NodeStatus)
	if err := nsv21.Convert_v2_1_NodeStatus_To_v2_NodeStatus(st, down); err != nil {
		return nil, err
	}
	ack, err := s.n.reportStatus(ctx, down)
	if err != nil {
		return nil, err
	}
	if st.KernelVersion != nil {
		s.n.mu.Lock()
		s.n.nodeLocked(st.NodeName).kernel = *st.KernelVersion
		s.n.mu.Unlock()
	}
	return &nsv21.Ack{Accepted: ack.Accepted}, nil
}

// ReportPodStatuses stores one pod's status.
func (s statusV21) ReportPodStatuses(ctx context.Context, p *nsv21.PodStatus) (*nsv21.Ack, error) {
	down := new(nsv2.PodStatus)
	if err := nsv21.Convert_v2_1_PodStatus_To_v2_PodStatus(p, down); err != nil {
		return nil, err
	}
	ack, err := s.n.reportPod(ctx, down)
	if err != nil {
		return nil, err
	}
	return &nsv21.Ack{Accepted: ack.Accepted}, nil
}

// KernelVersions returns how many of the nodes it knows reported their
// kernel version (nodestatus 2.1.0, from a v2.1 kubelet to a v2.1 node
// controller).
func (n *NodeController) KernelVersions() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	count := 0
	for _, nd := range n.nodes {
		if nd.kernel != "" {
			count++
		}
	}
	return count
}

// statusV1 serves nodestatus 1.0.0 as the old build does: its messages
// are read into the node controller's model, which is 2.0.0's.
type statusV1 struct{ n *NodeController }

// ReportStatus stores a node's 1.0.0 status, read up.
func (s statusV1) ReportStatus(ctx context.Context, st *nsv1.NodeStatus) (*nsv1.Ack, error) {
	up, err := nsv2.NodeStatusFromV1(st)
	if err != nil {
		return nil, err
	}
	ack, err := s.n.reportStatus(ctx, up)
	if err != nil {
		return nil, err
	}
	return nsv2.AckToV1(ack)
}

// ReportPodStatuses stores one pod's 1.0.0 status, read up.
func (s statusV1) ReportPodStatuses(ctx context.Context, p *nsv1.PodStatus) (*nsv1.Ack, error) {
	up, err := nsv2.PodStatusFromV1(p)
	if err != nil {
		return nil, err
	}
	ack, err := s.n.reportPod(ctx, up)
	if err != nil {
		return nil, err
	}
	return nsv2.AckToV1(ack)
}

// healthV2 serves nodehealth 2.0.0's method.
type healthV2 struct{ n *NodeController }

// CheckNode answers a node's health.
func (h healthV2) CheckNode(ctx context.Context, ref *nhv2.NodeRef) (*nhv2.NodeHealth, error) {
	return h.n.checkNode(ctx, ref)
}

// Bind binds a pod to a node.
func (h healthV2) Bind(ctx context.Context, b *nhv2.Binding) (*nhv2.BindResult, error) {
	return h.n.bind(ctx, b)
}

// Evict unbinds pods to make room for a pod of higher priority.
func (h healthV2) Evict(ctx context.Context, e *nhv2.Eviction) (*nhv2.EvictResult, error) {
	return h.n.evict(ctx, e)
}

// healthV1 serves nodehealth 1.0.0's methods as the old build does.
type healthV1 struct{ n *NodeController }

// CheckNode answers a node's health in 1.0.0's form.
func (h healthV1) CheckNode(ctx context.Context, ref *nhv1.NodeRef) (*nhv1.NodeHealth, error) {
	got, err := h.n.checkNode(ctx, &nhv2.NodeRef{NodeName: ref.NodeName})
	if err != nil {
		return nil, err
	}
	return nhv2.NodeHealthToV1(got)
}

// Bind binds a pod to a node, its 1.0.0 binding read up.
func (h healthV1) Bind(ctx context.Context, b *nhv1.Binding) (*nhv1.BindResult, error) {
	up, err := nhv2.BindingFromV1(b)
	if err != nil {
		return nil, err
	}
	res, err := h.n.bind(ctx, up)
	if err != nil {
		return nil, err
	}
	return nhv2.BindResultToV1(res)
}

// Evict unbinds pods, its 1.0.0 eviction read up.
func (h healthV1) Evict(ctx context.Context, e *nhv1.Eviction) (*nhv1.EvictResult, error) {
	up, err := nhv2.EvictionFromV1(e)
	if err != nil {
		return nil, err
	}
	res, err := h.n.evict(ctx, up)
	if err != nil {
		return nil, err
	}
	return nhv2.EvictResultToV1(res)
}

// describe copies into h what the kubelet reports of the node that the
// scheduler passes on to extenders as the node's object: its labels,
// taints, addresses, capacity and conditions.
func describe(h *nhv2.NodeHealth, st *nsv2.NodeStatus) {
	h.Labels = st.Labels
	capacity := nhv2.Resources{CPUMillis: st.Capacity.CPUMillis, MemoryBytes: st.Capacity.MemoryBytes, Pods: st.Capacity.Pods}
	h.Capacity = &capacity
	for _, t := range st.Taints {
		h.Taints = append(h.Taints, nhv2.Taint{Key: t.Key, Value: t.Value, Effect: nhv2.TaintEffect(t.Effect)})
	}
	for _, a := range st.Addresses {
		h.Addresses = append(h.Addresses, nhv2.NodeAddress{Type: nhv2.NodeAddressType(a.Type), Address: a.Address})
	}
	for _, c := range []struct {
		kind nhv2.NodeConditionType
		cond *nsv2.Condition
	}{{nhv2.NodeConditionTypeReady, &st.Conditions.Ready}, {nhv2.NodeConditionTypeMemoryPressure, st.Conditions.MemoryPressure},
		{nhv2.NodeConditionTypeDiskPressure, st.Conditions.DiskPressure}, {nhv2.NodeConditionTypePIDPressure, st.Conditions.PidPressure},
		{nhv2.NodeConditionTypeNetworkUnavailable, st.Conditions.NetworkUnavailable}} {
		if c.cond == nil {
			continue
		}
		out := nhv2.NodeCondition{Type: c.kind, Status: nhv2.NodeConditionStatus(c.cond.Status), Reason: c.cond.Reason, Message: c.cond.Message}
		if c.kind == nhv2.NodeConditionTypeReady && h.State == nhv2.NodeHealthStateUnknown {
			// As Kubernetes' node lifecycle controller marks a node whose
			// kubelet stopped reporting.
			reason, msg := "NodeStatusUnknown", "Kubelet stopped posting node status."
			out = nhv2.NodeCondition{Type: c.kind, Status: nhv2.NodeConditionStatusUnknown, Reason: &reason, Message: &msg}
		}
		h.Conditions = append(h.Conditions, out)
	}
}
