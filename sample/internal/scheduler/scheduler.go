// Package scheduler is the sample's scheduler: it watches the NodeHealth
// topic of the node controller (an informer: a local cache kept current by
// a watch stream), and places pods: it filters the healthy, schedulable
// nodes through each extender in turn, adds up their weighted scores,
// confirms the best node with the node controller (a watch may lag), has
// the binding extender bind the pod, and posts the binding to the node
// controller (Bind, as kube-scheduler posts a Binding to the API server),
// which assigns the pod to the node's kubelet. In Kubernetes a binding
// extender posts the Binding itself; the sample's extender holds no client
// of the node controller, so the scheduler posts it once the extender
// accepted.
//
// Extenders are lockstep peers that handshake, or plain Kubernetes
// extenders pinned to 1.0.0; a 2.0.0 scheduler calls the latter, and 1.0.0
// lockstep extenders, only in fork mode.
package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/framework"
	extv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nhv1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
)

// ExtenderConfig declares one extender the scheduler calls.
type ExtenderConfig struct {
	// Name names the extender in logs, metrics and errors.
	Name string
	// Client is the base of its client's configuration: component,
	// release, endpoints or source, TLS, observer, interceptors.
	Client framework.ClientConfig
	// PinnedURL and PinnedVersion, when set, name a plain extender that
	// does not handshake, called at its Kubernetes paths under PinnedURL
	// (a scheduler configuration's urlPrefix) at PinnedVersion (1.0.0).
	PinnedURL, PinnedVersion string
	// Paths are a pinned extender's own paths by method (Filter,
	// Prioritize, Bind), as kube-scheduler's filterVerb, prioritizeVerb
	// and bindVerb name them; a method not named keeps its declared path.
	Paths map[string]string
	// NoFilter: the extender does not filter (an empty filterVerb).
	NoFilter bool
	// Preempt: the extender takes part in preemption (a preemptVerb):
	// [Scheduler.Preempt] asks it.
	Preempt bool
	// Bind makes this extender bind pods; the first such one does (the
	// next, if it is ignorable and fails).
	Bind bool
	// Weight multiplies its scores; 0 skips Prioritize.
	Weight float64
	// Ignorable lets scheduling go on without the extender when its
	// filter, preemption or binding fails, as kube-scheduler's ignorable
	// does. A failed Prioritize fails no pod, ignorable or not: the
	// extender's scores are left out.
	Ignorable bool
	// NodeCacheCapable: the extender keeps its own node cache, so a 1.0.0
	// request names the candidate nodes (NodeNames); otherwise it carries
	// them as whole core/v1 Node objects (Nodes), as kube-scheduler sends
	// them. 2.0.0 always sends names.
	NodeCacheCapable bool
	// HTTPTimeout bounds each call to this extender; 0 for the
	// scheduler's CallTimeout.
	HTTPTimeout time.Duration
	// ManagedResources, when set, limit the extender to pods that request
	// or limit at least one of these resources, as kube-scheduler's
	// IsInterested does.
	ManagedResources []string
}

// Config configures a [Scheduler].
type Config struct {
	// API is the contract generation spoken, "v1" (1.0.0) or "v2"
	// (2.0.0); with Fork, v2 also calls 1.0.0 extenders, and CheckNode of
	// a 1.0.0 node controller (the NodeHealth topic is watched at the
	// scheduler's own version only).
	API  string
	Fork bool
	// NodeHealth is the base of the node controller client's configuration.
	NodeHealth framework.ClientConfig
	// Extenders are called in order.
	Extenders []ExtenderConfig
	// PodRate is how many pods per second the scheduler places; 0 for
	// none (callers then drive it with [Scheduler.ScheduleOne]).
	PodRate float64
	// CallTimeout bounds each call, including the time it blocks waiting
	// for a compatible peer; default 10s.
	CallTimeout time.Duration
	// SyncTimeout bounds how long [Scheduler.Run] waits for the NodeHealth
	// cache to sync before it places pods; default 30s. Pods placed after
	// it ran out, before the cache synced, fail as finding no node.
	SyncTimeout time.Duration
	// Registerer, if set, receives the scheduler's own metrics.
	Registerer prometheus.Registerer
	// Logger receives its logs; default slog.Default().
	Logger *slog.Logger
	// OnBound, if set, is called with every pod the node controller
	// accepted the binding of, and its node.
	OnBound func(pod extv2.PodRef, node string)
	// OnPreempted, if set, is called with every preemption once the node
	// controller evicted its victims, before the pod is bound.
	OnPreempted func(Preemption)
	// PodTemplate, if set, is what every pod carries besides what the
	// scheduler gives it: labels, tolerations, annotations, extended
	// resources (podtemplate.go).
	PodTemplate *corev1.Pod
}

// Scheduler places pods.
type Scheduler struct {
	cfg    Config
	logger *slog.Logger

	nodes      *framework.Client
	informerV1 *framework.Informer[nhv1.NodeHealth]
	informerV2 *framework.Informer[nhv2.NodeHealth]
	extenders  []*extender

	nextPod   atomic.Int64
	uidPrefix string
	stats     Stats

	pods    *prometheus.CounterVec
	calls   *prometheus.CounterVec
	victims prometheus.Counter
}

// Stats counts pods by outcome.
type Stats struct {
	// Scheduled pods were bound at the node controller; Unschedulable ones
	// found no node, even by preemption;
	// Failed ones met an error (a call failed or timed out).
	Scheduled, Unschedulable, Failed atomic.Int64
	// Preempted counts pods placed by evicting pods of lower priority
	// (counted in Scheduled too once bound), Victims the pods evicted.
	Preempted, Victims atomic.Int64
}

// extender is one extender's client.
type extender struct {
	cfg    ExtenderConfig
	client *framework.Client
}

// ErrNoNode is the error of a pod no node can take.
var ErrNoNode = errors.New("no node fits the pod")

// New builds the scheduler's clients and starts watching NodeHealth.
func New(cfg Config) (*Scheduler, error) {
	if cfg.API != "v1" && cfg.API != "v2" {
		return nil, fmt.Errorf("scheduler: API %q: want v1 or v2", cfg.API)
	}
	if cfg.Fork && cfg.API != "v2" {
		return nil, errors.New("scheduler: fork mode needs API v2")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 10 * time.Second
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Scheduler{cfg: cfg, logger: cfg.Logger, uidPrefix: randomHex(4),
		pods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sample_scheduler_pods_total",
			Help: "Pods the scheduler tried to place, by outcome (scheduled, unschedulable, failed).",
		}, []string{"outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sample_scheduler_calls_total",
			Help: "Calls to the node controller and the extenders, by peer (nodecontroller or the extender's name), method, the contract version the call travelled at, and code (ok on success, abandoned when the scheduler stopped first).",
		}, []string{"peer", "method", "version", "code"}),
		victims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sample_scheduler_preemption_victims_total",
			Help: "Pods the node controller evicted to make room for pods of higher priority.",
		}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(s.pods, s.calls, s.victims, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sample_scheduler_nodes",
			Help: "Nodes in the scheduler's NodeHealth cache.",
		}, func() float64 { return float64(len(s.Nodes())) }))
	}
	ncfg := cfg.NodeHealth
	ncfg.Interceptors = append(ncfg.Interceptors, s.countCalls("nodecontroller"))
	contract := nhv1.Contract
	if cfg.API == "v2" {
		contract = nhv2.Contract
		if cfg.Fork {
			ncfg.Fork = append(ncfg.Fork, nhv2.ForkV1)
		}
	}
	var err error
	if s.nodes, err = framework.NewClient(contract, ncfg); err != nil {
		return nil, fmt.Errorf("scheduler: node controller client: %w", err)
	}
	for _, ec := range cfg.Extenders {
		c, err := s.extenderClient(ec)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("scheduler: extender %s: %w", ec.Name, err)
		}
		s.extenders = append(s.extenders, &extender{cfg: ec, client: c})
	}
	if cfg.API == "v1" {
		s.informerV1, err = framework.Watch(context.Background(), s.nodes, "NodeHealth", framework.InformerHandlers[nhv1.NodeHealth]{})
	} else {
		s.informerV2, err = framework.Watch(context.Background(), s.nodes, "NodeHealth", framework.InformerHandlers[nhv2.NodeHealth]{})
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Scheduler) extenderClient(ec ExtenderConfig) (*framework.Client, error) {
	ccfg := ec.Client
	contract := extv1.Contract
	if s.cfg.API == "v2" {
		contract = extv2.Contract
		if s.cfg.Fork {
			// 1.0.0 requests carry names or whole nodes, as the extender
			// is configured.
			ccfg.Fork = append(ccfg.Fork[:len(ccfg.Fork):len(ccfg.Fork)], extv2.ForkV1With(s.objects(&extender{cfg: ec})))
		}
	}
	if ec.PinnedURL != "" {
		ccfg.Pinned = append(ccfg.Pinned, framework.PinnedPeer{URL: ec.PinnedURL, Version: ec.PinnedVersion, Paths: ec.Paths})
	}
	ccfg.Interceptors = append(ccfg.Interceptors, s.countCalls(ec.Name))
	return framework.NewClient(contract, ccfg)
}

// countCalls counts each call to peer by the version it travelled at.
func (s *Scheduler) countCalls(peer string) framework.Interceptor {
	return func(next framework.CallFunc) framework.CallFunc {
		return func(ctx context.Context, call *framework.Call) (any, error) {
			out, err := next(ctx, call)
			code := string(framework.CodeOf(err))
			switch {
			case err == nil:
				code = "ok"
			case errors.Is(ctx.Err(), context.Canceled):
				code = "abandoned" // the scheduler stopped while the call waited
			}
			s.calls.WithLabelValues(peer, call.Method, call.Version, code).Inc()
			return out, err
		}
	}
}

// Close stops watching and closes every client.
func (s *Scheduler) Close() {
	if s.informerV1 != nil {
		s.informerV1.Stop()
	}
	if s.informerV2 != nil {
		s.informerV2.Stop()
	}
	for _, e := range s.extenders {
		_ = e.client.Close()
	}
	if s.nodes != nil {
		_ = s.nodes.Close()
	}
}

// NodeClient returns the node controller's client.
func (s *Scheduler) NodeClient() *framework.Client { return s.nodes }

// ExtenderClient returns the named extender's client, or nil.
func (s *Scheduler) ExtenderClient(name string) *framework.Client {
	if e := s.extender(name); e != nil {
		return e.client
	}
	return nil
}

func (s *Scheduler) extender(name string) *extender {
	for _, e := range s.extenders {
		if e.cfg.Name == name {
			return e
		}
	}
	return nil
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() *Stats { return &s.stats }

// InformerV1 and InformerV2 return the NodeHealth cache of a 1.0.0 or a
// 2.0.0 scheduler; the other is nil.
func (s *Scheduler) InformerV1() *framework.Informer[nhv1.NodeHealth] { return s.informerV1 }

// InformerV2 is [Scheduler.InformerV1] for 2.0.0.
func (s *Scheduler) InformerV2() *framework.Informer[nhv2.NodeHealth] { return s.informerV2 }

// Synced reports whether the NodeHealth cache has had a full snapshot.
func (s *Scheduler) Synced() bool {
	if s.informerV1 != nil {
		return s.informerV1.HasSynced()
	}
	return s.informerV2.HasSynced()
}

// waitForSync waits until the NodeHealth cache has had a full snapshot,
// or ctx ends.
func (s *Scheduler) waitForSync(ctx context.Context) error {
	if s.informerV1 != nil {
		return s.informerV1.WaitForSync(ctx)
	}
	return s.informerV2.WaitForSync(ctx)
}

// nodeCount is the number of nodes in the NodeHealth cache.
func (s *Scheduler) nodeCount() int {
	if s.informerV1 != nil {
		return s.informerV1.Len()
	}
	return s.informerV2.Len()
}

// Nodes returns the cached health of every node, in 2.0.0's form, sorted
// by name.
func (s *Scheduler) Nodes() []nhv2.NodeHealth {
	var out []nhv2.NodeHealth
	if s.informerV1 != nil {
		for _, h := range s.informerV1.List() {
			if up, err := nhv2.NodeHealthFromV1(h); err == nil {
				out = append(out, *up)
			}
		}
		return out
	}
	if s.informerV2 == nil {
		return nil
	}
	for _, h := range s.informerV2.List() {
		out = append(out, *h)
	}
	return out
}

// Candidates returns the names of the cached nodes that are ready and
// schedulable.
func (s *Scheduler) Candidates() []string {
	var out []string
	for _, h := range s.Nodes() {
		if h.State == nhv2.NodeHealthStateReady && h.Schedulable {
			out = append(out, h.NodeName)
		}
	}
	return out
}

// Ready returns nil when the scheduler holds a session with a compatible
// node controller, has its nodes, and holds one with every extender that
// is not ignorable.
func (s *Scheduler) Ready() error {
	if err := s.nodes.Ready(); err != nil {
		return fmt.Errorf("node controller: %w", err)
	}
	if !s.Synced() {
		return errors.New("node controller: NodeHealth not synced yet")
	}
	for _, e := range s.extenders {
		if e.cfg.Ignorable {
			continue
		}
		if err := e.client.Ready(); err != nil {
			return fmt.Errorf("extender %s: %w", e.cfg.Name, err)
		}
	}
	return nil
}

// Status describes the scheduler for its /status page.
func (s *Scheduler) Status() any {
	ext := map[string]any{}
	for _, e := range s.extenders {
		ext[e.cfg.Name] = e.client.Endpoints()
	}
	return map[string]any{
		"api": s.cfg.API, "fork": s.cfg.Fork, "synced": s.Synced(), "nodes": s.Nodes(),
		"nodeController": s.nodes.Endpoints(), "extenders": ext,
		"scheduled": s.stats.Scheduled.Load(), "unschedulable": s.stats.Unschedulable.Load(), "failed": s.stats.Failed.Load(),
		"preempted": s.stats.Preempted.Load(), "victims": s.stats.Victims.Load(),
	}
}

// Run places PodRate pods per second until ctx ends, once the NodeHealth
// cache has synced (or SyncTimeout ran out).
func (s *Scheduler) Run(ctx context.Context) {
	if s.cfg.PodRate <= 0 {
		<-ctx.Done()
		return
	}
	if !s.awaitNodes(ctx) {
		return
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.cfg.PodRate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pod := s.NewPod()
		callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		node, err := s.scheduleOne(callCtx, pod)
		cancel()
		if ctx.Err() != nil {
			return // stopped mid-pod: not the pod's outcome
		}
		s.count(err)
		if err != nil {
			s.logger.Info("pod not scheduled", "pod", pod.Name, "err", err)
		} else {
			s.logger.Debug("pod scheduled", "pod", pod.Name, "node", node)
		}
	}
}

// awaitNodes waits, up to SyncTimeout, for the NodeHealth cache to sync,
// as kube-scheduler waits for its informers' caches before it schedules
// (WaitForCacheSync and WaitForHandlersSync in
// cmd/kube-scheduler/app/server.go, without a bound there): a pod placed
// before then finds no node. It says what it waits for, and for how long,
// and reports false if ctx ended first.
func (s *Scheduler) awaitNodes(ctx context.Context) bool {
	if s.Synced() {
		return true
	}
	start := time.Now()
	s.logger.Info("waiting for the node controller's NodeHealth to sync before placing pods", "timeout", s.cfg.SyncTimeout)
	wait, cancel := context.WithTimeout(ctx, s.cfg.SyncTimeout)
	defer cancel()
	err := s.waitForSync(wait)
	switch {
	case err == nil:
		s.logger.Info("NodeHealth synced; placing pods", "nodes", s.nodeCount(), "waited", time.Since(start).Round(time.Millisecond))
	case ctx.Err() != nil:
		return false
	default:
		why := "no reason known"
		if rerr := s.nodes.Ready(); rerr != nil {
			why = rerr.Error()
		}
		s.logger.Warn("NodeHealth has not synced; placing pods anyway: they find no node until it does",
			"waited", time.Since(start).Round(time.Millisecond), "nodeController", why)
	}
	return true
}

// PriorityClass is a scheduling.k8s.io/v1 PriorityClass: the API server
// resolves a pod's priorityClassName to spec.priority.
type PriorityClass struct {
	Name  string
	Value int64
}

// PriorityClasses are the classes the scheduler's pods draw from, by
// the pod's number modulo 10: 0 to 5 low, 6 to 8 medium, 9 high.
var PriorityClasses = [3]PriorityClass{{"sample-low", 100}, {"sample-medium", 1000}, {"sample-high", 10000}}

// priorityClassOf is the class of the i-th pod.
func priorityClassOf(i int64) PriorityClass {
	switch i % 10 {
	case 6, 7, 8:
		return PriorityClasses[1]
	case 9:
		return PriorityClasses[2]
	}
	return PriorityClasses[0]
}

// NewPod returns the next pod to place: named pod-000001 and on, with a
// UID unique to this scheduler process, requests that vary, a priority
// of [PriorityClasses], every tenth tolerating maintenance windows, and
// the labels and tolerations of the pod template.
func (s *Scheduler) NewPod() extv2.PodRef {
	i := s.nextPod.Add(1)
	class := priorityClassOf(i)
	pod := extv2.PodRef{Namespace: "default", Name: fmt.Sprintf("pod-%06d", i), UID: fmt.Sprintf("%s-%06d", s.uidPrefix, i),
		Labels:   map[string]string{"app": "web"},
		Requests: extv2.Requests{CPUMillis: 100 + (i*37)%400, MemoryBytes: (64 + (i*53)%192) << 20},
		Priority: &class.Value, PriorityClassName: &class.Name}
	if i%10 == 0 {
		pod.Labels["lockstep.dev/tolerate-maintenance"] = "true"
	}
	s.fromTemplate(&pod)
	return pod
}

// ScheduleOne places pod and returns its node: filter, score, confirm,
// bind; when no node fits, preempt pods of lower priority (preempt.go).
// ErrNoNode means no node fits, even by preemption.
func (s *Scheduler) ScheduleOne(ctx context.Context, pod extv2.PodRef) (string, error) {
	node, err := s.scheduleOne(ctx, pod)
	s.count(err)
	return node, err
}

// count counts a pod's outcome.
func (s *Scheduler) count(err error) {
	switch {
	case err == nil:
		s.stats.Scheduled.Add(1)
		s.pods.WithLabelValues("scheduled").Inc()
	case errors.Is(err, ErrNoNode):
		s.stats.Unschedulable.Add(1)
		s.pods.WithLabelValues("unschedulable").Inc()
	default:
		s.stats.Failed.Add(1)
		s.pods.WithLabelValues("failed").Inc()
	}
}

func (s *Scheduler) scheduleOne(ctx context.Context, pod extv2.PodRef) (string, error) {
	// With no node at all, preemption cannot help either (kube-scheduler's
	// ErrNoNodesAvailable, unschedulable and unresolvable).
	if !s.Synced() {
		return "", fmt.Errorf("%w: the node controller's NodeHealth has not synced yet", ErrNoNode)
	}
	if s.nodeCount() == 0 {
		return "", fmt.Errorf("%w: no nodes available to schedule pods", ErrNoNode)
	}
	nodes := s.candidatesFor(pod)
	var filteredOut failures
	for _, e := range s.extenders {
		if len(nodes) == 0 {
			break
		}
		if e.cfg.NoFilter || !s.interested(e, pod) {
			continue
		}
		resp, err := s.Filter(ctx, e.cfg.Name, pod, nodes)
		if err == nil {
			err = onlySent(nodes, resp.Feasible)
		}
		if err != nil {
			if s.skip(ctx, e, "filter", pod, err) {
				continue
			}
			return "", fmt.Errorf("extender %s: filter: %w", e.cfg.Name, err)
		}
		filteredOut.add(e.cfg.Name, nodes, resp)
		nodes = resp.Feasible
	}
	if len(nodes) == 0 {
		node, err := s.preempt(ctx, pod)
		if errors.Is(err, ErrNoNode) && len(filteredOut) > 0 {
			err = fmt.Errorf("%w; filtered out by extenders: %s", err, filteredOut)
		}
		return node, err
	}
	scores := map[string]float64{}
	for _, e := range s.extenders {
		if e.cfg.Weight == 0 || !s.interested(e, pod) {
			continue
		}
		resp, err := s.Prioritize(ctx, e.cfg.Name, pod, nodes)
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("extender %s: prioritize: %w", e.cfg.Name, err)
			}
			// kube-scheduler places the pod without the scores of an
			// extender that failed to prioritize, ignorable or not
			// (prioritizeNodes in schedule_one.go): scores only rank nodes
			// that every filter kept.
			s.logger.Info("an extender failed to prioritize; its scores are left out", "extender", e.cfg.Name, "pod", pod.Name, "err", err)
			continue
		}
		for _, sc := range resp.Scores {
			scores[sc.Node] += e.cfg.Weight * sc.Score
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if scores[nodes[i]] != scores[nodes[j]] {
			return scores[nodes[i]] > scores[nodes[j]]
		}
		return nodes[i] < nodes[j]
	})
	best := nodes[0]
	if err := s.bind(ctx, pod, best); err != nil {
		return "", err
	}
	return best, nil
}

// failures counts the nodes extenders filtered out, by extender and
// reason, to say why a pod found no node as kube-scheduler's FitError
// does ("0/4 nodes are available: 4 no capacity annotation"): without
// them, an extender that rules out every node leaves only "no node fits
// the pod". A node an extender left out of its answer without naming it
// among the failed (tidb-scheduler's filter answers no node, and no
// reason, when its HA predicate fails) counts as given no reason.
type failures map[string]int

func (f *failures) add(extender string, sent []string, resp *extv2.FilterResponse) {
	count := func(why string) {
		if *f == nil {
			*f = failures{}
		}
		(*f)[fmt.Sprintf("%s (%s)", why, extender)]++
	}
	explained := map[string]bool{} // failed with a reason, or feasible
	for _, n := range resp.Feasible {
		explained[n] = true
	}
	for _, n := range resp.Failed {
		explained[n.Node] = true
		why := string(n.Reason)
		if n.Message != nil && *n.Message != "" {
			why = *n.Message
			if n.Reason != extv2.NodeFailureReasonOther {
				why = string(n.Reason) + ": " + why
			}
		}
		count(why)
	}
	for _, n := range sent {
		if !explained[n] {
			count("no reason given")
		}
	}
}

// String lists each reason with its count of nodes, most first.
func (f failures) String() string {
	reasons := slices.Collect(maps.Keys(f))
	sort.Slice(reasons, func(i, j int) bool {
		if f[reasons[i]] != f[reasons[j]] {
			return f[reasons[i]] > f[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", f[r], r)
	}
	return strings.Join(parts, ", ")
}

// skip reports whether scheduling goes on without the extender, which
// failed at verb for pod: when it is ignorable, and the pod's own time
// (ctx) has not run out, which would fail every later step anyway and
// blame the wrong one. It logs that it skipped it and why, as
// kube-scheduler does: otherwise an ignorable extender that is down or
// misconfigured fails unseen.
func (s *Scheduler) skip(ctx context.Context, e *extender, verb string, pod extv2.PodRef, err error) bool {
	if !e.cfg.Ignorable || ctx.Err() != nil {
		return false
	}
	s.logger.Info("skipping an ignorable extender that failed", "extender", e.cfg.Name, "verb", verb, "pod", pod.Name, "err", err)
	return true
}

// onlySent fails when an extender's feasible nodes name one it was not
// sent: taking it would place the pod on a node that the taint and
// resource checks or an earlier extender ruled out, or that does not
// exist. kube-scheduler fails such an answer only from an extender that
// caches nodes (nodeCacheCapable: "claims a filtered node which is not
// found in the input node list") and takes another's Nodes as they come;
// this is stricter, and an ignorable extender that answers a node it was
// not sent is skipped, its filtering with it.
func onlySent(sent, feasible []string) error {
	was := make(map[string]bool, len(sent))
	for _, n := range sent {
		was[n] = true
	}
	for _, n := range feasible {
		if !was[n] {
			return fmt.Errorf("it answered feasible node %q, which it was not sent", n)
		}
	}
	return nil
}

// bind confirms with the node controller that the pod fits on node (a
// watch may lag), has the binding extender bind it, and posts the
// binding.
func (s *Scheduler) bind(ctx context.Context, pod extv2.PodRef, node string) error {
	h, err := s.CheckNode(ctx, node)
	if err != nil {
		return fmt.Errorf("node controller: check %s: %w", node, err)
	}
	if h.State != nhv2.NodeHealthStateReady || !h.Schedulable || !fits(pod, h.Allocatable) {
		return fmt.Errorf("%w: %s changed since it was watched", ErrNoNode, node)
	}
	return s.commit(ctx, pod, node)
}

// commit has the binding extender bind the pod to node, and posts the
// binding (which changes nothing where the extender bound it).
func (s *Scheduler) commit(ctx context.Context, pod extv2.PodRef, node string) error {
	for _, e := range s.extenders {
		if !e.cfg.Bind || !s.interested(e, pod) {
			continue
		}
		if err := s.Bind(ctx, e.cfg.Name, pod, node); err != nil {
			// kube-scheduler's extendersBinding: an ignorable binder that
			// failed leaves the pod to the next binder, or to the default
			// binding.
			if s.skip(ctx, e, "bind", pod, err) {
				continue
			}
			return fmt.Errorf("extender %s: bind: %w", e.cfg.Name, err)
		}
		break
	}
	if err := s.PostBinding(ctx, pod, node); err != nil {
		return fmt.Errorf("node controller: bind %s to %s: %w", pod.Name, node, err)
	}
	if s.cfg.OnBound != nil {
		s.cfg.OnBound(pod, node)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
