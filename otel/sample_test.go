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
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

// nodeController is the node controller's side of nodestatus 2.0.0, as
// the sample's does it in outline: store the status, publish the node's
// health (its own span, a child of the call's).
type nodeController struct {
	tracer trace.Tracer
}

func (n *nodeController) ReportStatus(ctx context.Context, s *nsv2.NodeStatus) (*nsv2.Ack, error) {
	_, span := n.tracer.Start(ctx, "publish NodeHealth "+s.NodeName)
	span.End()
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

// render prints a trace as an indented tree, each span with its kind,
// its batch item and the process that exported it, children in the order
// they started.
func render(spans tracetest.SpanStubs, process map[trace.SpanID]string) string {
	children := map[trace.SpanID][]tracetest.SpanStub{}
	ids := map[trace.SpanID]bool{}
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
			if v := attr(sp, otellockstep.AttrBatchItem); v.Type() != 0 {
				line += fmt.Sprintf(" item %d", v.AsInt64())
			}
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
