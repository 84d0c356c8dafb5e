// Package schedulerplugin is a kube-scheduler plugin that asks the sample
// extender (sample/api/extender) over lockstep, instead of through
// KubeSchedulerConfiguration's HTTP extenders: the same extender serves
// both. Built into a kube-scheduler with
//
//	app.NewSchedulerCommand(app.WithPlugin(schedulerplugin.Name, schedulerplugin.New))
//
// it filters (PreFilter, Filter), scores (PreScore, Score) and binds
// (Bind) with the extender's answers.
//
// One call per pod and cycle, not per node: PreFilter sends the extender
// every candidate node in one Filter call and keeps the answer in the
// cycle's state, which Filter reads for each node; PreScore does the same
// with Prioritize for Score. Bind asks the extender to bind (it records
// the placement, and refuses a pod it bound elsewhere), then posts the
// Binding to the apiserver, as the default binder does.
//
// The client speaks extender 2.0.0 and, in fork mode, 1.0.0 too
// ([extv2.ForkV1]), so it works with an extender of either generation
// and through an extender's upgrade from one to the other. It handshakes
// in the background from the plugin's start; a call waits for a
// compatible extender, bounded by Args.CallTimeout.
//
// The scheduling cycle is one goroutine for the whole scheduler, so a call
// that waits stalls every pod. What a pod gets when the extender is
// absent, slow or refusing is [Args.OnUnavailable]'s policy:
//
//   - "Retry" (the default): PreFilter and PreScore fail the cycle with an
//     error after at most CallTimeout; the pod goes to the scheduler's
//     backoff queue (1 s, doubling to 10 s by default) and is tried again,
//     with its PodScheduled condition false (SchedulerError) meanwhile. No
//     pod is placed without the extender's word.
//   - "Ignore": the pod is scheduled as if the plugin were not configured
//     (PreFilter and PreScore skip it), as KubeSchedulerConfiguration's
//     ignorable extenders are.
//
// An extender that answers but refuses a node (Filter) leaves the pod
// unschedulable there, with the extender's reason; one that refuses a
// binding (a conflict) fails the binding cycle, and the scheduler tries
// the pod again. Bind is not covered by OnUnavailable: a binding runs
// outside the scheduling cycle, so it waits up to CallTimeout and then
// fails, and the pod is tried again.
package schedulerplugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/framework"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kube"
	"github.com/lockstep-dev/lockstep/sample/kubernetes/endpointslices"
)

// Name is the plugin's name in a KubeSchedulerConfiguration profile.
const Name = "LockstepExtender"

// The OnUnavailable policies.
const (
	Retry  = "Retry"
	Ignore = "Ignore"
)

// Args are the plugin's arguments, its pluginConfig entry in a
// KubeSchedulerConfiguration:
//
//	pluginConfig:
//	- name: LockstepExtender
//	  args:
//	    endpoints: ["https://127.0.0.1:8443"]
//	    caFile: /etc/lockstep/ca.crt
//	    certFile: /etc/lockstep/tls.crt
//	    keyFile: /etc/lockstep/tls.key
//	    callTimeout: 2s
//	    onUnavailable: Retry
type Args struct {
	// Endpoints are the extender's replicas' base URLs; or
	Endpoints []string `json:"endpoints,omitempty"`
	// Service names the extender's Service, whose EndpointSlices list its
	// replicas and their readiness ([endpointslices.Source]); the
	// scheduler's identity then needs get, list and watch on
	// endpointslices in its namespace.
	Service *ServiceRef `json:"service,omitempty"`
	// CAFile, CertFile and KeyFile are PEM files for mutual TLS: the CA
	// the extender's certificate chains to, and the scheduler's own
	// certificate (lockstep://scheduler/<name>). Plain http is for
	// loopback only.
	CAFile   string `json:"caFile,omitempty"`
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// Release is the release the scheduler reports in its handshakes;
	// default 2.0.0.
	Release string `json:"release,omitempty"`
	// CallTimeout bounds each call to the extender, its wait for a
	// compatible extender included; default 2s.
	CallTimeout metav1.Duration `json:"callTimeout,omitempty"`
	// OnUnavailable is what a pod gets when the extender cannot be asked
	// within CallTimeout: Retry (default) or Ignore.
	OnUnavailable string `json:"onUnavailable,omitempty"`
}

// ServiceRef names a Service and the port its replicas serve lockstep on.
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Port is the name of the slices' port; empty takes their only port.
	Port string `json:"port,omitempty"`
}

// DefaultCallTimeout is Args.CallTimeout's default: long enough for an
// extender's replica to take over from one that stops, short enough that
// the scheduler, stalled meanwhile, is not stalled for long.
const DefaultCallTimeout = 2 * time.Second

func (a *Args) validate() error {
	if (len(a.Endpoints) == 0) == (a.Service == nil) {
		return errors.New("either endpoints (the extender's URLs) or service (its Service) is required")
	}
	if a.Service != nil && (a.Service.Namespace == "" || a.Service.Name == "") {
		return errors.New("service: namespace and name are required")
	}
	if a.Release == "" {
		a.Release = "2.0.0"
	}
	if a.CallTimeout.Duration == 0 {
		a.CallTimeout.Duration = DefaultCallTimeout
	}
	if a.CallTimeout.Duration < 0 {
		return fmt.Errorf("callTimeout %v: must be positive", a.CallTimeout.Duration)
	}
	switch a.OnUnavailable {
	case "":
		a.OnUnavailable = Retry
	case Retry, Ignore:
	default:
		return fmt.Errorf("onUnavailable %q: want %s or %s", a.OnUnavailable, Retry, Ignore)
	}
	if (a.CertFile == "") != (a.KeyFile == "") {
		return errors.New("certFile and keyFile go together")
	}
	return nil
}

func (a *Args) tlsConfig() (*tls.Config, error) {
	if a.CAFile == "" && a.CertFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.CAFile != "" {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", a.CAFile)
		}
	}
	if a.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// DecodeArgs reads the plugin's arguments as kube-scheduler hands them to
// an out-of-tree plugin: a *runtime.Unknown holding JSON or YAML.
func DecodeArgs(obj runtime.Object) (*Args, error) {
	args := &Args{}
	if obj != nil {
		u, ok := obj.(*runtime.Unknown)
		if !ok {
			return nil, fmt.Errorf("%s: arguments of type %T, want runtime.Unknown", Name, obj)
		}
		if len(u.Raw) > 0 {
			if err := yaml.UnmarshalStrict(u.Raw, args); err != nil {
				return nil, fmt.Errorf("%s: arguments: %w", Name, err)
			}
		}
	}
	if err := args.validate(); err != nil {
		return nil, fmt.Errorf("%s: arguments: %w", Name, err)
	}
	return args, nil
}

// Plugin is the plugin; [New] builds it.
type Plugin struct {
	args   *Args
	client *framework.Client
	ext    extv2.Client
	bind   func(ctx context.Context, b *corev1.Binding) error
}

var (
	_ fwk.PreFilterPlugin = (*Plugin)(nil)
	_ fwk.FilterPlugin    = (*Plugin)(nil)
	_ fwk.PreScorePlugin  = (*Plugin)(nil)
	_ fwk.ScorePlugin     = (*Plugin)(nil)
	_ fwk.BindPlugin      = (*Plugin)(nil)
)

// New is the plugin's factory, for app.WithPlugin: it starts the lockstep
// client, which handshakes with the extender in the background and is
// closed when ctx (the scheduler's) ends.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	cfg := Config{Args: args, Logger: slog.New(logr.ToSlogHandler(klog.FromContext(ctx)))}
	if h != nil && h.ClientSet() != nil {
		cs := h.ClientSet()
		cfg.Bind = func(ctx context.Context, b *corev1.Binding) error {
			return cs.CoreV1().Pods(b.Namespace).Bind(ctx, b, metav1.CreateOptions{})
		}
		if args.Service != nil {
			cfg.Source = &endpointslices.Source{Client: cs, Namespace: args.Service.Namespace, Service: args.Service.Name,
				Port: args.Service.Port, Logger: cfg.Logger}
		}
	}
	return NewWith(ctx, cfg)
}

// Config is what [NewWith] builds a plugin from.
type Config struct {
	// Args are the plugin's arguments (required).
	Args *Args
	// TLSConfig, if set, is the client's TLS configuration instead of the
	// one Args' files make.
	TLSConfig *tls.Config
	// Source, if set, finds the extender's replicas instead of
	// Args.Endpoints.
	Source framework.EndpointSource
	// Bind posts a Binding to the apiserver; nil leaves binding to the
	// profile's other bind plugins (Bind skips).
	Bind func(ctx context.Context, b *corev1.Binding) error
	// Logger receives the lockstep client's logs; default slog.Default().
	Logger *slog.Logger
}

// NewWith is [New] from a [Config] rather than a scheduler's handle.
func NewWith(ctx context.Context, cfg Config) (*Plugin, error) {
	args := cfg.Args
	if err := args.validate(); err != nil {
		return nil, fmt.Errorf("%s: arguments: %w", Name, err)
	}
	if args.Service != nil && cfg.Source == nil {
		return nil, fmt.Errorf("%s: service: no source of its EndpointSlices (Config.Source)", Name)
	}
	tlsCfg := cfg.TLSConfig
	if tlsCfg == nil {
		var err error
		if tlsCfg, err = args.tlsConfig(); err != nil {
			return nil, fmt.Errorf("%s: TLS: %w", Name, err)
		}
	}
	client, err := framework.NewClient(extv2.Contract, framework.ClientConfig{
		Component: extv2.Contract.Client(), Release: args.Release,
		Endpoints: args.Endpoints, Source: cfg.Source, TLSConfig: tlsCfg,
		Fork:   []framework.Fork{extv2.ForkV1},
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	go func() { _ = client.Run(ctx) }()
	return &Plugin{args: args, client: client, ext: extv2.NewClient(client), bind: cfg.Bind}, nil
}

// Name returns [Name].
func (p *Plugin) Name() string { return Name }

// Client returns the plugin's lockstep client, for its readiness.
func (p *Plugin) Client() *framework.Client { return p.client }

// The cycle state's keys.
const (
	filterKey fwk.StateKey = Name + "/filter"
	scoreKey  fwk.StateKey = Name + "/score"
)

// filterState is the extender's Filter answer for the cycle's pod: the
// nodes it refused, with why. A node it was not asked about (none is) is
// feasible.
type filterState struct {
	failed map[string]extv2.NodeFailure
}

func (s *filterState) Clone() fwk.StateData { return s }

// scoreState is the extender's scores for the cycle's pod, from 0 to 1.
type scoreState struct {
	scores map[string]float64
}

func (s *scoreState) Clone() fwk.StateData { return s }

// callContext bounds one call to the extender.
func (p *Plugin) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.args.CallTimeout.Duration)
}

// unavailable is the status of a cycle whose extender could not be asked:
// Skip under Ignore (the extension point's Filter or Score is skipped),
// else an error, which sends the pod to the backoff queue.
func (p *Plugin) unavailable(verb string, err error) *fwk.Status {
	if p.args.OnUnavailable == Ignore {
		return fwk.NewStatus(fwk.Skip)
	}
	return fwk.AsStatus(fmt.Errorf("%s: extender %s: %w", Name, verb, err))
}

// PreFilter asks the extender, once for the pod, which of the candidate
// nodes it may go to; the nodes it refuses are left out of the cycle.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	names := nodeNames(nodes)
	ctx, cancel := p.callContext(ctx)
	defer cancel()
	resp, err := p.ext.Filter(ctx, &extv2.FilterRequest{Pod: PodRef(pod), Nodes: names})
	if err != nil {
		return nil, p.unavailable("Filter", err)
	}
	s := &filterState{failed: make(map[string]extv2.NodeFailure, len(resp.Failed))}
	for _, f := range resp.Failed {
		s.failed[f.Node] = f
	}
	state.Write(filterKey, s)
	// Every node the extender refused is left to Filter, which says why; the
	// result narrows nothing, so that the reasons reach the pod's events.
	return nil, nil
}

// PreFilterExtensions returns nil: the extender's answer does not depend
// on the other pods a preemption would remove.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter reads the extender's answer for the node.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	data, err := state.Read(filterKey)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: no Filter answer in the cycle: %w", Name, err))
	}
	f, refused := data.(*filterState).failed[node.Node().Name]
	if !refused {
		return nil
	}
	reason := string(f.Reason)
	if f.Message != nil {
		reason += ": " + *f.Message
	}
	if f.Unresolvable != nil && *f.Unresolvable {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return fwk.NewStatus(fwk.Unschedulable, reason)
}

// PreScore asks the extender, once for the pod, to score the nodes that
// passed filtering.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	ctx, cancel := p.callContext(ctx)
	defer cancel()
	resp, err := p.ext.Prioritize(ctx, &extv2.PrioritizeRequest{Pod: PodRef(pod), Nodes: nodeNames(nodes)})
	if err != nil {
		return p.unavailable("Prioritize", err)
	}
	s := &scoreState{scores: make(map[string]float64, len(resp.Scores))}
	for _, sc := range resp.Scores {
		s.scores[sc.Node] = sc.Score
	}
	state.Write(scoreKey, s)
	return nil
}

// Score returns the extender's score of the node, from 0 to 1, scaled to
// kube-scheduler's 0 to MaxNodeScore.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, _ *corev1.Pod, node fwk.NodeInfo) (int64, *fwk.Status) {
	data, err := state.Read(scoreKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("%s: no Prioritize answer in the cycle: %w", Name, err))
	}
	score := data.(*scoreState).scores[node.Node().Name]
	return int64(min(1, max(0, score))*float64(fwk.MaxNodeScore) + 0.5), nil
}

// ScoreExtensions returns nil: the extender's scores are normalised.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Bind has the extender bind the pod to the node, then posts the Binding.
// An extender that refuses (it bound the pod elsewhere) fails the
// binding; so does one not reached within CallTimeout.
func (p *Plugin) Bind(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	if p.bind == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	callCtx, cancel := p.callContext(ctx)
	_, err := p.ext.Bind(callCtx, &extv2.BindRequest{Pod: PodRef(pod), Node: node})
	cancel()
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: extender Bind of %s/%s to %s: %w", Name, pod.Namespace, pod.Name, node, err))
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := p.bind(ctx, b); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}

// PodRef is the pod as the extender contract carries it.
func PodRef(pod *corev1.Pod) extv2.PodRef {
	cpu, mem := kube.Requests(pod)
	out := extv2.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Labels: pod.Labels, Annotations: pod.Annotations,
		Requests: extv2.Requests{CPUMillis: cpu, MemoryBytes: mem, Extended: kube.OtherRequests(pod)}}
	if pod.Spec.Priority != nil {
		prio := int64(*pod.Spec.Priority)
		out.Priority = &prio
	}
	if pod.Spec.PriorityClassName != "" {
		out.PriorityClassName = &pod.Spec.PriorityClassName
	}
	for _, t := range pod.Spec.Tolerations {
		out.Tolerations = append(out.Tolerations, extv2.TolerationFromCore(t))
	}
	return out
}

func nodeNames(nodes []fwk.NodeInfo) []string {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Node().Name)
	}
	return names
}
