package otellockstep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
	otellockstep "github.com/lockstep-dev/lockstep/otel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type report struct {
	Node string `json:"node"`
}

type ack struct {
	Seen string `json:"seen"`
}

var nodes = framework.MustContract(handshake.Contract{
	Name: "nodes", Version: "1.0.0", Server: "nodecontroller", Client: "kubelet",
	Methods: map[string]handshake.Method{
		"Report":      {Request: "Report", Response: "Ack"},
		"ReportBatch": {Request: "Report", Response: "Ack", Batch: true},
	},
	Schemas: map[string]json.RawMessage{
		"Report": json.RawMessage(`{"type":"object","required":["node"],"properties":{"node":{"type":"string"}}}`),
		"Ack":    json.RawMessage(`{"type":"object","required":["seen"],"properties":{"seen":{"type":"string"}}}`),
	},
})

// side is one process's tracing: its own provider and in-memory exporter,
// as two components each export their own spans.
type side struct {
	exporter *tracetest.InMemoryExporter
	provider *sdktrace.TracerProvider
}

func newSide(t *testing.T) *side {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &side{exporter: exp, provider: tp}
}

// spans returns the ended spans named name.
func (s *side) spans(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, sp := range s.exporter.GetSpans() {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func attr(sp tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, kv := range sp.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// countingTransport counts the multi-call requests a client sends.
type countingTransport struct {
	next  http.RoundTripper
	multi atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/_multi") {
		c.multi.Add(1)
	}
	return c.next.RoundTrip(r)
}

// pair is a traced node controller and a traced kubelet on 127.0.0.1.
type pair struct {
	server, client *side
	srv            *frameworktest.Running
	cl             *framework.Client
	transport      *countingTransport
	release        chan struct{} // when set, Report waits for it
}

func start(t *testing.T, autoBatch *framework.AutoBatch) *pair {
	t.Helper()
	p := &pair{server: newSide(t), client: newSide(t)}
	handlerTracer := p.server.provider.Tracer("nodecontroller")
	p.srv = frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0",
		Interceptors: []framework.Interceptor{otellockstep.ServerInterceptor(otellockstep.WithTracerProvider(p.server.provider))},
	}, func(s *framework.Server) {
		framework.HandleUnary(s, nodes, "Report", func(ctx context.Context, r *report) (*ack, error) {
			if r.Node == "missing" {
				return nil, framework.Errorf(framework.CodeNotFound, "no node %s", r.Node)
			}
			// The handler's own work: a child of the server span.
			_, span := handlerTracer.Start(ctx, "store "+r.Node)
			span.End()
			return &ack{Seen: r.Node}, nil
		})
		framework.HandleBatch(s, nodes, "ReportBatch", func(ctx context.Context, r *report) (*ack, error) {
			return &ack{Seen: r.Node}, nil
		})
	})
	p.transport = &countingTransport{next: framework.NewTransport(nil)}
	p.cl = frameworktest.NewClient(t, nodes, framework.ClientConfig{Component: "kubelet", Release: "1.0.0",
		Endpoints: []string{p.srv.URL}, Transport: p.transport, AutoBatch: autoBatch,
		Interceptors: []framework.Interceptor{otellockstep.ClientInterceptor(otellockstep.WithTracerProvider(p.client.provider))},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.cl.WaitReady(ctx))
	return p
}

func TestTraceCrossesACall(t *testing.T) {
	p := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx, root := p.client.provider.Tracer("kubelet").Start(ctx, "sync node-1")
	_, err := framework.CallUnary[report, ack](ctx, p.cl, "Report", &report{Node: "node-1"})
	require.NoError(t, err)
	root.End()

	clients := p.client.spans("nodes/Report")
	require.Len(t, clients, 1)
	cs := clients[0]
	assert.Equal(t, trace.SpanKindClient, cs.SpanKind)
	assert.Equal(t, root.SpanContext().SpanID(), cs.Parent.SpanID(), "the client span is the caller's child")
	assert.Equal(t, "nodes", attr(cs, "rpc.service").AsString())
	assert.Equal(t, "Report", attr(cs, "rpc.method").AsString())
	assert.Equal(t, "1.0.0", attr(cs, otellockstep.AttrVersion).AsString())
	assert.Equal(t, "nodecontroller", attr(cs, otellockstep.AttrPeerComponent).AsString())
	assert.Equal(t, p.srv.URL, attr(cs, otellockstep.AttrEndpoint).AsString())

	servers := p.server.spans("nodes/Report")
	require.Len(t, servers, 1)
	ss := servers[0]
	assert.Equal(t, trace.SpanKindServer, ss.SpanKind)
	assert.Equal(t, cs.SpanContext.TraceID(), ss.SpanContext.TraceID(), "one trace across both processes")
	assert.Equal(t, cs.SpanContext.SpanID(), ss.Parent.SpanID(), "the server span is the client span's child")
	assert.True(t, ss.Parent.IsRemote())
	assert.Equal(t, "call", attr(ss, otellockstep.AttrEntry).AsString())
	assert.Equal(t, "kubelet", attr(ss, otellockstep.AttrPeerComponent).AsString())

	work := p.server.spans("store node-1")
	require.Len(t, work, 1)
	assert.Equal(t, ss.SpanContext.SpanID(), work[0].Parent.SpanID(), "the handler's context carries the server span")

	// The handshake is traced on the server, heartbeats are not.
	assert.NotEmpty(t, p.server.spans("nodes/handshake"))
	for _, sp := range p.server.exporter.GetSpans() {
		assert.NotContains(t, sp.Name, "heartbeat")
	}
}

func TestErrorsAreRecorded(t *testing.T) {
	p := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := framework.CallUnary[report, ack](ctx, p.cl, "Report", &report{Node: "missing"})
	require.Equal(t, framework.CodeNotFound, framework.CodeOf(err))
	for _, s := range []*side{p.client, p.server} {
		spans := s.spans("nodes/Report")
		require.Len(t, spans, 1)
		assert.Equal(t, codes.Error, spans[0].Status.Code)
		assert.Equal(t, "not_found", attr(spans[0], otellockstep.AttrCode).AsString())
	}
}

func TestBatchItemsAreChildrenOfTheirCall(t *testing.T) {
	p := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results, err := framework.CallBatch[report, ack](ctx, p.cl, "ReportBatch", []*report{{Node: "a"}, {Node: "b"}, {Node: "c"}})
	require.NoError(t, err)
	require.Len(t, results, 3)
	cs := p.client.spans("nodes/ReportBatch")
	require.Len(t, cs, 1)
	items := p.server.spans("nodes/ReportBatch")
	require.Len(t, items, 3, "a server span per item")
	seen := map[int64]bool{}
	for _, it := range items {
		assert.Equal(t, cs[0].SpanContext.SpanID(), it.Parent.SpanID())
		seen[attr(it, otellockstep.AttrBatchItem).AsInt64()] = true
	}
	assert.Equal(t, map[int64]bool{0: true, 1: true, 2: true}, seen)
}

// TestMultiCallsKeepEachCallsTrace sends concurrent calls, each in a trace
// of its own, through the client's automatic batching: the calls that
// travel together in one multi-call still each continue their own trace.
func TestMultiCallsKeepEachCallsTrace(t *testing.T) {
	p := start(t, &framework.AutoBatch{MaxInFlight: 1, MaxDelay: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const calls = 32
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, root := p.client.provider.Tracer("kubelet").Start(ctx, fmt.Sprintf("sync node-%d", i))
			defer root.End()
			_, err := framework.CallUnary[report, ack](ctx, p.cl, "Report", &report{Node: fmt.Sprintf("node-%d", i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, p.transport.multi.Load(), "some calls travelled in a multi-call")

	clientByTrace := map[trace.TraceID]tracetest.SpanStub{}
	for _, cs := range p.client.spans("nodes/Report") {
		clientByTrace[cs.SpanContext.TraceID()] = cs
	}
	require.Len(t, clientByTrace, calls, "a trace per call")
	servers := p.server.spans("nodes/Report")
	require.Len(t, servers, calls)
	for _, ss := range servers {
		cs, ok := clientByTrace[ss.SpanContext.TraceID()]
		require.True(t, ok, "a server span in a trace no call started")
		assert.Equal(t, cs.SpanContext.SpanID(), ss.Parent.SpanID())
	}
}

// TestBatchItemsKeepTheirOwnTraces sends a batch call whose items come
// from three requests of their own (three traces) and one without: each
// traced item gets a client span in its own trace, linked to the batch's
// span, and its server span is that span's child; the untraced item's
// server span is the batch span's child, as every item's is without item
// contexts.
func TestBatchItemsKeepTheirOwnTraces(t *testing.T) {
	p := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tracer := p.client.provider.Tracer("kubelet")
	var itemCtxs []context.Context
	var origins []trace.Span
	for i := range 3 {
		ictx, sp := tracer.Start(ctx, fmt.Sprintf("pod %d changed", i))
		itemCtxs, origins = append(itemCtxs, ictx), append(origins, sp)
	}
	itemCtxs = append(itemCtxs, nil)
	bctx, flush := tracer.Start(ctx, "flush pod statuses")
	results, err := framework.CallBatch[report, ack](bctx, p.cl, "ReportBatch",
		[]*report{{Node: "a"}, {Node: "b"}, {Node: "c"}, {Node: "d"}}, framework.WithItemContexts(itemCtxs...))
	require.NoError(t, err)
	flush.End()
	for _, sp := range origins {
		sp.End()
	}
	require.Len(t, results, 4)
	for i, r := range results {
		require.NoError(t, r.Err)
		assert.Equal(t, string(rune('a'+i)), r.Value.Seen)
	}

	var batch tracetest.SpanStub
	itemClient := map[int64]tracetest.SpanStub{}
	for _, cs := range p.client.spans("nodes/ReportBatch") {
		if attr(cs, otellockstep.AttrBatchItem).Type() == attribute.INVALID {
			batch = cs
			continue
		}
		itemClient[attr(cs, otellockstep.AttrBatchItem).AsInt64()] = cs
	}
	require.True(t, batch.SpanContext.IsValid(), "the batch's own client span")
	assert.Equal(t, flush.SpanContext().SpanID(), batch.Parent.SpanID())
	require.Len(t, batch.Links, 3, "the batch span links to every traced item")
	require.Len(t, itemClient, 3, "a client span per traced item")

	servers := map[int64]tracetest.SpanStub{}
	for _, ss := range p.server.spans("nodes/ReportBatch") {
		servers[attr(ss, otellockstep.AttrBatchItem).AsInt64()] = ss
	}
	require.Len(t, servers, 4)
	for i := range 3 {
		ic := itemClient[int64(i)]
		assert.Equal(t, origins[i].SpanContext().TraceID(), ic.SpanContext.TraceID(), "item %d stays in its own trace", i)
		assert.Equal(t, origins[i].SpanContext().SpanID(), ic.Parent.SpanID())
		require.Len(t, ic.Links, 1)
		assert.Equal(t, batch.SpanContext.SpanID(), ic.Links[0].SpanContext.SpanID(), "item %d links to the batch", i)
		assert.Equal(t, origins[i].SpanContext().SpanID(), batch.Links[i].SpanContext.SpanID())
		ss := servers[int64(i)]
		assert.Equal(t, ic.SpanContext.TraceID(), ss.SpanContext.TraceID())
		assert.Equal(t, ic.SpanContext.SpanID(), ss.Parent.SpanID(), "item %d's server span is its own client span's child", i)
	}
	assert.Equal(t, batch.SpanContext.SpanID(), servers[3].Parent.SpanID(), "an item without a context of its own is the batch's")
}

// TestItemContextsMustMatchTheItems: a list of item contexts of another
// length than the items is the caller's mistake, refused before sending.
func TestItemContextsMustMatchTheItems(t *testing.T) {
	p := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := framework.CallBatch[report, ack](ctx, p.cl, "ReportBatch", []*report{{Node: "a"}, {Node: "b"}},
		framework.WithItemContexts(ctx))
	require.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err))
	assert.Empty(t, p.server.spans("nodes/ReportBatch"))
}
