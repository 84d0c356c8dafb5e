package otellockstep_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	otellockstep "github.com/lockstep-dev/lockstep/otel"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

// nodeController is the node controller's side of nodestatus 2.0.0, as
// the sample's does it in outline: store the status, publish the node's
// health (its own span, a child of the call's).
type nodeController struct {
	tracer trace.Tracer
	// health, when set, is the NodeHealth topic the publish writes,
	// carrying the publish span's trace context to its watchers.
	health *framework.TopicWriter[nhv2.NodeHealth]
}

func (n *nodeController) ReportStatus(ctx context.Context, s *nsv2.NodeStatus) (*nsv2.Ack, error) {
	ctx, span := n.tracer.Start(ctx, "publish NodeHealth "+s.NodeName)
	defer span.End()
	if n.health != nil {
		res := nhv2.Resources{CPUMillis: s.Allocatable.CPUMillis, MemoryBytes: s.Allocatable.MemoryBytes, Pods: s.Allocatable.Pods}
		if err := n.health.SetFor(ctx, &nhv2.NodeHealth{NodeName: s.NodeName, State: nhv2.NodeHealthStateReady,
			Schedulable: true, Allocatable: res}); err != nil {
			return nil, err
		}
	}
	return &nsv2.Ack{Accepted: true}, nil
}

func (n *nodeController) ReportPodStatuses(ctx context.Context, p *nsv2.PodStatus) (*nsv2.Ack, error) {
	return &nsv2.Ack{Accepted: true}, nil
}

// TestTraceAcrossTheSample traces a kubelet's status report to the node
// controller over the sample's nodestatus 2.0.0, through its generated
// client and server, and prints the trace as docs/operations.md shows it.
func TestTraceAcrossTheSample(t *testing.T) {
	kubelet, controller := newSide(t), newSide(t)
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		Interceptors: []framework.Interceptor{otellockstep.ServerInterceptor(otellockstep.WithTracerProvider(controller.provider))},
	}, func(s *framework.Server) {
		nsv2.Register(s, &nodeController{tracer: controller.provider.Tracer("nodecontroller")})
		nsv2.ServePodAssignment(s)
	})
	cl := frameworktest.NewClient(t, nsv2.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Instance: "kubelet-node-1", Endpoints: []string{srv.URL},
		Interceptors: []framework.Interceptor{otellockstep.ClientInterceptor(otellockstep.WithTracerProvider(kubelet.provider))},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx, root := kubelet.provider.Tracer("kubelet").Start(ctx, "kubelet: sync node-1")
	ns := nsv2.NewClient(cl)
	ready := nsv2.Condition{Status: nsv2.ConditionStatusTrue}
	res := nsv2.Resources{CPUMillis: 4000, MemoryBytes: 8 << 30, Pods: 110}
	_, err := ns.ReportStatus(ctx, &nsv2.NodeStatus{NodeName: "node-1", Conditions: nsv2.Conditions{Ready: ready}, Capacity: res, Allocatable: res})
	require.NoError(t, err)
	_, err = ns.ReportPodStatuses(ctx, []*nsv2.PodStatus{
		{NodeName: "node-1", Namespace: "default", Name: "web-0", UID: "u0", Phase: nsv2.PodStatusPhaseRunning},
		{NodeName: "node-1", Namespace: "default", Name: "web-1", UID: "u1", Phase: nsv2.PodStatusPhaseRunning},
	})
	require.NoError(t, err)
	root.End()

	// Both processes' spans, one trace.
	all := append(kubelet.exporter.GetSpans(), controller.exporter.GetSpans()...)
	var inTrace tracetest.SpanStubs
	for _, sp := range all {
		if sp.SpanContext.TraceID() == root.SpanContext().TraceID() {
			inTrace = append(inTrace, sp)
		}
	}
	process := map[trace.SpanID]string{}
	for _, sp := range kubelet.exporter.GetSpans() {
		process[sp.SpanContext.SpanID()] = "kubelet"
	}
	for _, sp := range controller.exporter.GetSpans() {
		process[sp.SpanContext.SpanID()] = "nodecontroller"
	}
	tree := render(inTrace, process)
	t.Logf("the trace:\n%s", tree)
	want := `kubelet: sync node-1  [kubelet]
  nodestatus/ReportStatus  client  [kubelet]
    nodestatus/ReportStatus  server  [nodecontroller]
      publish NodeHealth node-1  [nodecontroller]
  nodestatus/ReportPodStatuses  client  [kubelet]
    nodestatus/ReportPodStatuses  server item 0  [nodecontroller]
    nodestatus/ReportPodStatuses  server item 1  [nodecontroller]
`
	assert.Equal(t, want, tree)
}

// scheduling is the node controller's side of nodehealth's methods,
// which the trace of a topic delivery does not use.
type scheduling struct{}

func (scheduling) Bind(context.Context, *nhv2.Binding) (*nhv2.BindResult, error) {
	return nil, framework.Errorf(framework.CodeUnavailable, "not in this test")
}

func (scheduling) CheckNode(context.Context, *nhv2.NodeRef) (*nhv2.NodeHealth, error) {
	return nil, framework.Errorf(framework.CodeUnavailable, "not in this test")
}

func (scheduling) Evict(context.Context, *nhv2.Eviction) (*nhv2.EvictResult, error) {
	return nil, framework.Errorf(framework.CodeUnavailable, "not in this test")
}

// TestTopicDeliveryAcrossTheSample: the node controller publishes a
// node's health (the NodeHealth topic of the sample's nodehealth 2.0.0)
// while it handles the kubelet's status report, and the scheduler's
// informer reports it: the scheduler's delivery span, the root of a trace
// of its own, links to the publish span in the kubelet's trace. It prints
// both traces as docs/operations.md shows them.
func TestTopicDeliveryAcrossTheSample(t *testing.T) {
	kubelet, controller, scheduler := newSide(t), newSide(t), newSide(t)
	nc := &nodeController{tracer: controller.provider.Tracer("nodecontroller")}
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		Interceptors: []framework.Interceptor{otellockstep.ServerInterceptor(otellockstep.WithTracerProvider(controller.provider))},
		Propagator:   otellockstep.Propagator(),
	}, func(s *framework.Server) {
		nc.health = nhv2.ServeNodeHealth(s)
		nsv2.Register(s, nc)
		nsv2.ServePodAssignment(s)
		nhv2.Register(s, scheduling{})
	})
	kcl := frameworktest.NewClient(t, nsv2.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Instance: "kubelet-node-1", Endpoints: []string{srv.URL},
		Interceptors: []framework.Interceptor{otellockstep.ClientInterceptor(otellockstep.WithTracerProvider(kubelet.provider))},
	})
	scl := frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0",
		Endpoints: []string{srv.URL}, Propagator: otellockstep.Propagator(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	delivered := make(chan struct{}, 1)
	schedTracer := scheduler.provider.Tracer("scheduler")
	var inf *framework.Informer[nhv2.NodeHealth]
	ready := make(chan struct{})
	inf, err := nhv2.WatchNodeHealth(ctx, scl, framework.InformerHandlers[nhv2.NodeHealth]{
		OnAdd: func(key string, h *nhv2.NodeHealth) {
			<-ready // inf is set
			dctx, span := otellockstep.StartDelivery(inf.DeliveryContext(), "nodehealth", "NodeHealth", key,
				otellockstep.WithTracerProvider(scheduler.provider))
			_, place := schedTracer.Start(dctx, "scheduler: node "+key+" schedulable")
			place.End()
			span.End()
			delivered <- struct{}{}
		},
	})
	require.NoError(t, err)
	close(ready)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))

	kctx, root := kubelet.provider.Tracer("kubelet").Start(ctx, "kubelet: sync node-1")
	res := nsv2.Resources{CPUMillis: 4000, MemoryBytes: 8 << 30, Pods: 110}
	_, err = nsv2.NewClient(kcl).ReportStatus(kctx, &nsv2.NodeStatus{NodeName: "node-1",
		Conditions: nsv2.Conditions{Ready: nsv2.Condition{Status: nsv2.ConditionStatusTrue}}, Capacity: res, Allocatable: res})
	require.NoError(t, err)
	root.End()
	select {
	case <-delivered:
	case <-ctx.Done():
		t.Fatal("the scheduler saw no NodeHealth")
	}

	all := append(append(kubelet.exporter.GetSpans(), controller.exporter.GetSpans()...), scheduler.exporter.GetSpans()...)
	process := map[trace.SpanID]string{}
	for name, s := range map[string]*side{"kubelet": kubelet, "nodecontroller": controller, "scheduler": scheduler} {
		for _, sp := range s.exporter.GetSpans() {
			process[sp.SpanContext.SpanID()] = name
		}
	}
	var delivery tracetest.SpanStub
	for _, sp := range scheduler.exporter.GetSpans() {
		if sp.Name == "nodehealth/NodeHealth deliver" {
			delivery = sp
		}
	}
	var b strings.Builder
	for _, tid := range []trace.TraceID{root.SpanContext().TraceID(), delivery.SpanContext.TraceID()} {
		var inTrace tracetest.SpanStubs
		for _, sp := range all {
			if sp.SpanContext.TraceID() == tid && !strings.Contains(sp.Name, "handshake") {
				inTrace = append(inTrace, sp)
			}
		}
		b.WriteString(renderWithNames(inTrace, all, process))
	}
	t.Logf("the traces:\n%s", b.String())
	want := `kubelet: sync node-1  [kubelet]
  nodestatus/ReportStatus  client  [kubelet]
    nodestatus/ReportStatus  server  [nodecontroller]
      publish NodeHealth node-1  [nodecontroller]
nodehealth/NodeHealth deliver, links to "publish NodeHealth node-1"  [scheduler]
  scheduler: node node-1 schedulable  [scheduler]
`
	assert.Equal(t, want, b.String())
}

// TestTraceOfBatchItemsAcrossTheSample: a kubelet whose pod workers each
// noticed a change in a trace of their own sends the changes as one
// ReportPodStatuses batch, each item with its worker's context
// (framework.WithItemContexts): each item stays in its worker's trace, with
// a client span linked to the batch's and its server span under it, and
// the batch's span links to the items'. It prints the traces as
// docs/operations.md shows them.
func TestTraceOfBatchItemsAcrossTheSample(t *testing.T) {
	kubelet, controller := newSide(t), newSide(t)
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		Interceptors: []framework.Interceptor{otellockstep.ServerInterceptor(otellockstep.WithTracerProvider(controller.provider))},
	}, func(s *framework.Server) {
		nsv2.Register(s, &nodeController{tracer: controller.provider.Tracer("nodecontroller")})
		nsv2.ServePodAssignment(s)
	})
	cl := frameworktest.NewClient(t, nsv2.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Instance: "kubelet-node-1", Endpoints: []string{srv.URL},
		Interceptors: []framework.Interceptor{otellockstep.ClientInterceptor(otellockstep.WithTracerProvider(kubelet.provider))},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tracer := kubelet.provider.Tracer("kubelet")
	var items []*nsv2.PodStatus
	var itemCtxs []context.Context
	var workers []trace.Span
	for _, name := range []string{"web-0", "web-1"} {
		wctx, w := tracer.Start(ctx, "kubelet: pod "+name+" changed")
		items = append(items, &nsv2.PodStatus{NodeName: "node-1", Namespace: "default", Name: name, UID: "u-" + name, Phase: nsv2.PodStatusPhaseRunning})
		itemCtxs, workers = append(itemCtxs, wctx), append(workers, w)
	}
	fctx, flush := tracer.Start(ctx, "kubelet: flush pod statuses")
	results, err := nsv2.NewClient(cl).ReportPodStatuses(fctx, items, framework.WithItemContexts(itemCtxs...))
	require.NoError(t, err)
	for _, r := range results {
		require.NoError(t, r.Err)
	}
	flush.End()
	for _, w := range workers {
		w.End()
	}

	all := append(kubelet.exporter.GetSpans(), controller.exporter.GetSpans()...)
	process := map[trace.SpanID]string{}
	for _, sp := range kubelet.exporter.GetSpans() {
		process[sp.SpanContext.SpanID()] = "kubelet"
	}
	for _, sp := range controller.exporter.GetSpans() {
		process[sp.SpanContext.SpanID()] = "nodecontroller"
	}
	var b strings.Builder
	for _, root := range append(workers, flush) {
		var inTrace tracetest.SpanStubs
		for _, sp := range all {
			if sp.SpanContext.TraceID() == root.SpanContext().TraceID() {
				inTrace = append(inTrace, sp)
			}
		}
		// Links name spans of other traces: give render all spans' names.
		b.WriteString(renderWithNames(inTrace, all, process))
	}
	t.Logf("the traces:\n%s", b.String())
	want := `kubelet: pod web-0 changed  [kubelet]
  nodestatus/ReportPodStatuses  client item 0, links to "nodestatus/ReportPodStatuses"  [kubelet]
    nodestatus/ReportPodStatuses  server item 0  [nodecontroller]
kubelet: pod web-1 changed  [kubelet]
  nodestatus/ReportPodStatuses  client item 1, links to "nodestatus/ReportPodStatuses"  [kubelet]
    nodestatus/ReportPodStatuses  server item 1  [nodecontroller]
kubelet: flush pod statuses  [kubelet]
  nodestatus/ReportPodStatuses  client, links to "kubelet: pod web-0 changed", "kubelet: pod web-1 changed"  [kubelet]
`
	assert.Equal(t, want, b.String())
}

// render prints a trace as an indented tree, each span with its kind,
// its batch item, the spans it links to (by name, among spans) and the
// process that exported it, children in the order they started.
func render(spans tracetest.SpanStubs, process map[trace.SpanID]string) string {
	return renderWithNames(spans, spans, process)
}

// renderWithNames is render, naming linked spans among named.
func renderWithNames(spans, named tracetest.SpanStubs, process map[trace.SpanID]string) string {
	children := map[trace.SpanID][]tracetest.SpanStub{}
	ids := map[trace.SpanID]bool{}
	names := map[trace.SpanID]string{}
	for _, sp := range named {
		names[sp.SpanContext.SpanID()] = fmt.Sprintf("%q", sp.Name)
	}
	for _, sp := range spans {
		ids[sp.SpanContext.SpanID()] = true
	}
	var roots []tracetest.SpanStub
	for _, sp := range spans {
		if ids[sp.Parent.SpanID()] {
			children[sp.Parent.SpanID()] = append(children[sp.Parent.SpanID()], sp)
		} else {
			roots = append(roots, sp)
		}
	}
	var b strings.Builder
	var walk func(sp tracetest.SpanStub, depth int)
	walk = func(sp tracetest.SpanStub, depth int) {
		line := strings.Repeat("  ", depth) + sp.Name
		switch sp.SpanKind {
		case trace.SpanKindClient:
			line += "  client"
		case trace.SpanKindServer:
			line += "  server"
		}
		if v := attr(sp, otellockstep.AttrBatchItem); v.Type() != 0 {
			line += fmt.Sprintf(" item %d", v.AsInt64())
		}
		if len(sp.Links) > 0 {
			var to []string
			for _, l := range sp.Links {
				to = append(to, names[l.SpanContext.SpanID()])
			}
			line += ", links to " + strings.Join(to, ", ")
		}
		fmt.Fprintf(&b, "%s  [%s]\n", line, process[sp.SpanContext.SpanID()])
		kids := children[sp.SpanContext.SpanID()]
		sort.SliceStable(kids, func(i, j int) bool {
			if !kids[i].StartTime.Equal(kids[j].StartTime) {
				return kids[i].StartTime.Before(kids[j].StartTime)
			}
			return attr(kids[i], otellockstep.AttrBatchItem).AsInt64() < attr(kids[j], otellockstep.AttrBatchItem).AsInt64()
		})
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}
