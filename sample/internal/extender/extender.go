// Package extender is the sample's scheduler extender: it filters out
// nodes in a maintenance window (unless the pod tolerates it) and nodes
// marked unschedulable, scores nodes so that the pods it binds spread
// evenly, and binds pods, refusing a pod already bound elsewhere.
//
// It serves the extender contract over lockstep ([Extender.Server]) at 1.0.0
// or 2.0.0, or both in fork mode, and with Config.Plain the Kubernetes
// scheduler extender protocol (1.0.0) without a handshake too
// ([framework.Server.ServePlain]), as a plain extender that a
// kube-scheduler, or a lockstep scheduler pinned to 1.0.0, calls.
package extender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep-dev/lockstep/framework"
	extv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
)

// TolerateMaintenanceLabel on a pod, set to "true", lets it onto nodes in
// a maintenance window.
const TolerateMaintenanceLabel = "lockstep.dev/tolerate-maintenance"

// Config configures an [Extender].
type Config struct {
	// API is the contract generation served, "v1" (1.0.0, the Kubernetes
	// protocol) or "v2" (2.0.0); with Fork, v2 also serves 1.0.0.
	API  string
	Fork bool
	// Plain serves 1.0.0, the Kubernetes extender protocol, to callers that
	// do not handshake, at PlainPrefix + /filter, /prioritize and /bind (a
	// scheduler configuration's urlPrefix). It needs 1.0.0 (API v1, or v2
	// in fork mode). A plain extender is ready without a scheduler's
	// session: a kube-scheduler never holds one.
	Plain       bool
	PlainPrefix string
	// Maintenance names the nodes in a maintenance window.
	Maintenance []string
	// Applied, if set, is called where a handler commits a call's effect;
	// for plain requests, [framework.PlainRequest] gives the request.
	Applied func(ctx context.Context)
	// Registerer, if set, receives the extender's own metrics.
	Registerer prometheus.Registerer
	// Logger receives its logs; default slog.Default().
	Logger *slog.Logger
}

// Extender decides and remembers bindings.
type Extender struct {
	cfg    Config
	logger *slog.Logger

	mu      sync.Mutex
	bound   map[string]string // pod UID (or namespace/name) → node
	perNode map[string]int

	requests *prometheus.CounterVec
}

// New returns an extender.
func New(cfg Config) (*Extender, error) {
	if cfg.API != "v1" && cfg.API != "v2" {
		return nil, fmt.Errorf("extender: API %q: want v1 or v2", cfg.API)
	}
	if cfg.Fork && cfg.API != "v2" {
		return nil, errors.New("extender: fork mode needs API v2")
	}
	if cfg.Plain && cfg.API != "v1" && !cfg.Fork {
		return nil, errors.New("extender: the Kubernetes protocol is extender 1.0.0: serve it with API v1, or v2 in fork mode")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Extender{cfg: cfg, logger: cfg.Logger, bound: map[string]string{}, perNode: map[string]int{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sample_extender_requests_total",
			Help: "Requests handled, by protocol (lockstep, plain), method, contract version and outcome (ok, error).",
		}, []string{"protocol", "method", "version", "outcome"}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(e.requests)
	}
	return e, nil
}

// SpeaksV1 reports whether the extender speaks 1.0.0, the Kubernetes
// protocol.
func (e *Extender) SpeaksV1() bool { return e.cfg.API == "v1" || e.cfg.Fork }

// Server builds the extender's lockstep server from cfg (component,
// release, logger, observer, interceptors): 1.0.0 or 2.0.0, or both in
// fork mode, where 1.0.0's Prioritize is converted and its Filter and
// Bind are hand-written, since their answers depend on the request (Nodes
// or NodeNames) and on errors (an Error member instead of a coded error).
// It is ready once a scheduler holds a session, or at once when plain.
// With Config.Plain it serves 1.0.0's handlers to plain callers too.
func (e *Extender) Server(cfg framework.ServerConfig) (*framework.Server, error) {
	if !e.cfg.Plain {
		cfg.RequirePeers = append(cfg.RequirePeers, extv1.Contract.Name())
	}
	srv, err := framework.NewServer(cfg)
	if err != nil {
		return nil, err
	}
	if e.cfg.API == "v1" {
		extv1.Register(srv, serverV1{e})
	} else {
		extv2.Register(srv, serverV2{e})
		if e.cfg.Fork {
			framework.HandleUnary(srv, extv1.Contract, extv1.MethodFilter, serverV1{e}.Filter)
			framework.ForkUnary(srv, extv1.Contract, extv2.Contract, extv2.MethodPrioritize,
				extv2.PrioritizeRequestFromV1, extv2.PrioritizeResponseToV1)
			framework.HandleUnary(srv, extv1.Contract, extv1.MethodBind, serverV1{e}.Bind)
			framework.ForkUnary(srv, extv1.Contract, extv2.Contract, extv2.MethodProcessPreemption,
				extv2.PreemptRequestFromV1, extv2.PreemptResponseToV1)
		}
	}
	if e.cfg.Plain {
		srv.ServePlain(extv1.Contract, e.cfg.PlainPrefix)
	}
	return srv, nil
}

// Bindings returns how many pods the extender bound to each node.
func (e *Extender) Bindings() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.perNode))
	for k, v := range e.perNode {
		out[k] = v
	}
	return out
}

func (e *Extender) count(ctx context.Context, method string, err error) {
	protocol, version := "lockstep", extv1.Contract.Version()
	if call := framework.CallFromContext(ctx); call != nil {
		version = call.Version
	}
	if framework.PlainRequest(ctx) != nil {
		protocol = "plain"
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	e.requests.WithLabelValues(protocol, method, version, outcome).Inc()
}

func (e *Extender) applied(ctx context.Context) {
	if e.cfg.Applied != nil {
		e.cfg.Applied(ctx)
	}
}

// filter keeps the nodes the pod may go to; unschedulable names nodes
// whose objects say so (1.0.0 requests with whole nodes).
func (e *Extender) filter(pod extv2.PodRef, nodes []string, unschedulable map[string]bool) *extv2.FilterResponse {
	tolerates := pod.Labels[TolerateMaintenanceLabel] == "true"
	out := &extv2.FilterResponse{Feasible: []string{}}
	for _, n := range nodes {
		switch {
		case unschedulable[n]:
			yes, msg := true, "node is marked unschedulable"
			out.Failed = append(out.Failed, extv2.NodeFailure{Node: n, Reason: extv2.NodeFailureReasonUnschedulable, Message: &msg, Unresolvable: &yes})
		case !tolerates && slices.Contains(e.cfg.Maintenance, n):
			msg := "node is in a maintenance window"
			out.Failed = append(out.Failed, extv2.NodeFailure{Node: n, Reason: extv2.NodeFailureReasonMaintenance, Message: &msg})
		default:
			out.Feasible = append(out.Feasible, n)
		}
	}
	return out
}

// prioritize favours the nodes it bound the fewest pods to: a node's score
// is 1 - bound/(most bound + 1).
func (e *Extender) prioritize(nodes []string) *extv2.PrioritizeResponse {
	e.mu.Lock()
	defer e.mu.Unlock()
	most := 0
	for _, n := range nodes {
		most = max(most, e.perNode[n])
	}
	out := &extv2.PrioritizeResponse{Scores: make([]extv2.NodeScore, len(nodes))}
	for i, n := range nodes {
		out.Scores[i] = extv2.NodeScore{Node: n, Score: 1 - float64(e.perNode[n])/float64(most+1)}
	}
	return out
}

// bind records the pod on the node; binding it again to the same node
// succeeds, to another is a conflict.
func (e *Extender) bind(pod extv2.PodRef, node string) error {
	key := pod.UID
	if key == "" {
		key = pod.Namespace + "/" + pod.Name
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev, ok := e.bound[key]; ok {
		if prev == node {
			return nil
		}
		return framework.Errorf(framework.CodeConflict, "pod %s/%s is already bound to %s", pod.Namespace, pod.Name, prev)
	}
	e.bound[key] = node
	e.perNode[node]++
	return nil
}

// preempt keeps the candidates the pod may go to once victims are gone:
// not a node in a maintenance window, unless the pod tolerates it.
func (e *Extender) preempt(req *extv2.PreemptRequest) *extv2.PreemptResponse {
	tolerates := req.Pod.Labels[TolerateMaintenanceLabel] == "true"
	out := &extv2.PreemptResponse{Candidates: []extv2.PreemptResponseCandidatesItem{}}
	for _, c := range req.Candidates {
		if !tolerates && slices.Contains(e.cfg.Maintenance, c.Node) {
			continue
		}
		keep := extv2.PreemptResponseCandidatesItem{Node: c.Node, Victims: []string{}, PdbViolations: c.PdbViolations}
		for _, v := range c.Victims {
			keep.Victims = append(keep.Victims, v.UID)
		}
		out.Candidates = append(out.Candidates, keep)
	}
	return out
}
