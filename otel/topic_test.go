package otellockstep_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
	otellockstep "github.com/lockstep-dev/lockstep/otel"
)

type health struct {
	Node  string `json:"node"`
	Ready bool   `json:"ready"`
}

var healthContract = framework.MustContract(handshake.Contract{
	Name: "health", Version: "1.0.0", Server: "nodecontroller", Client: "scheduler",
	Topics: map[string]handshake.Topic{
		"NodeHealth": {Object: "Health", Key: "node", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
		"Probes":     {Object: "Health", Key: "node", Writer: handshake.RoleClient, LostWriter: handshake.LostWriterDelete},
	},
	Schemas: map[string]json.RawMessage{
		"Health": json.RawMessage(`{"type":"object","required":["node","ready"],"properties":{"node":{"type":"string"},"ready":{"type":"boolean"}}}`),
	},
})

// deliveries records the delivery spans a watcher's handlers start, by
// key and kind of change.
type deliveries struct {
	mu    sync.Mutex
	spans map[string]trace.SpanContext
	got   chan string
}

func (d *deliveries) handlers(side *side, inf **framework.Informer[health], topic string) framework.InformerHandlers[health] {
	deliver := func(kind, key string) {
		_, span := otellockstep.StartDelivery((*inf).DeliveryContext(), "health", topic, key, otellockstep.WithTracerProvider(side.provider))
		span.End()
		d.mu.Lock()
		d.spans[kind+" "+key] = span.SpanContext()
		d.mu.Unlock()
		d.got <- kind + " " + key
	}
	return framework.InformerHandlers[health]{
		OnAdd:    func(key string, _ *health) { deliver("add", key) },
		OnUpdate: func(key string, _, _ *health) { deliver("update", key) },
		OnDelete: func(key string, _ *health) { deliver("delete", key) },
	}
}

func (d *deliveries) wait(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-d.got:
		require.Equal(t, want, got)
	case <-time.After(10 * time.Second):
		t.Fatalf("no delivery %q", want)
	}
}

// linkOf returns the one span the recorded delivery span links to.
func linkOf(t *testing.T, s *side, sc trace.SpanContext) trace.SpanContext {
	t.Helper()
	for _, sp := range s.exporter.GetSpans() {
		if sp.SpanContext.SpanID() == sc.SpanID() {
			assert.Equal(t, trace.SpanKindConsumer, sp.SpanKind)
			assert.False(t, sp.Parent.IsValid(), "a delivery is a trace's root")
			require.Len(t, sp.Links, 1)
			return sp.Links[0].SpanContext
		}
	}
	t.Fatalf("no delivery span %s", sc.SpanID())
	return trace.SpanContext{}
}

// TestTopicDeliveriesLinkToTheirWrites: a server-written topic's change
// made under a span (TopicWriter.SetContext, DeleteContext), and a
// client-written topic's change made by a TopicPublisher under a span,
// reach a watcher whose handlers' delivery spans link to the span that
// wrote them: the writer's own span for the server's writes, the server's
// topic-write span (the publisher span's child) for the client's. A
// write without a span carries nothing, and its delivery links to nothing.
func TestTopicDeliveriesLinkToTheirWrites(t *testing.T) {
	serverSide, watcherSide, publisherSide := newSide(t), newSide(t), newSide(t)
	var writer *framework.TopicWriter[health]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0",
		Interceptors: []framework.Interceptor{otellockstep.ServerInterceptor(otellockstep.WithTracerProvider(serverSide.provider))},
		Propagator:   otellockstep.Propagator(),
	}, func(s *framework.Server) {
		writer = framework.ServeTopic[health](s, healthContract, "NodeHealth")
		framework.ServeClientTopic[health](s, healthContract, "Probes")
	})
	newClient := func(s *side) *framework.Client {
		return frameworktest.NewClient(t, healthContract, framework.ClientConfig{Component: "scheduler", Release: "1.0.0",
			Endpoints:    []string{srv.URL},
			Interceptors: []framework.Interceptor{otellockstep.ClientInterceptor(otellockstep.WithTracerProvider(s.provider))},
			Propagator:   otellockstep.Propagator(),
		})
	}
	watcher, publisher := newClient(watcherSide), newClient(publisherSide)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	d := &deliveries{spans: map[string]trace.SpanContext{}, got: make(chan string, 16)}
	var nodeHealth, probes *framework.Informer[health]
	var err error
	nodeHealth, err = framework.Watch(ctx, watcher, "NodeHealth", d.handlers(watcherSide, &nodeHealth, "NodeHealth"))
	require.NoError(t, err)
	defer nodeHealth.Stop()
	require.NoError(t, nodeHealth.WaitForSync(ctx))
	probes, err = framework.Watch(ctx, watcher, "Probes", d.handlers(watcherSide, &probes, "Probes"))
	require.NoError(t, err)
	defer probes.Stop()
	require.NoError(t, probes.WaitForSync(ctx))

	tracer := serverSide.provider.Tracer("nodecontroller")
	wctx, write := tracer.Start(ctx, "node-1 became ready")
	require.NoError(t, writer.SetContext(wctx, &health{Node: "node-1", Ready: true}))
	write.End()
	d.wait(t, "add node-1")
	dctx, del := tracer.Start(ctx, "node-1 removed")
	require.NoError(t, writer.DeleteContext(dctx, "node-1"))
	del.End()
	d.wait(t, "delete node-1")
	require.NoError(t, writer.Set(&health{Node: "node-2"}))
	d.wait(t, "add node-2")

	assert.Equal(t, write.SpanContext().SpanID(), linkOf(t, watcherSide, d.spans["add node-1"]).SpanID())
	assert.Equal(t, write.SpanContext().TraceID(), linkOf(t, watcherSide, d.spans["add node-1"]).TraceID())
	assert.Equal(t, del.SpanContext().SpanID(), linkOf(t, watcherSide, d.spans["delete node-1"]).SpanID())
	for _, sp := range watcherSide.exporter.GetSpans() {
		if sp.SpanContext.SpanID() == d.spans["add node-2"].SpanID() {
			assert.Empty(t, sp.Links, "a write without a span links to nothing")
		}
	}

	pub, err := framework.NewTopicPublisher[health](publisher, "Probes")
	require.NoError(t, err)
	defer pub.Close()
	pctx, probe := publisherSide.provider.Tracer("scheduler").Start(ctx, "probe node-3")
	require.NoError(t, pub.Set(pctx, &health{Node: "node-3", Ready: true}))
	probe.End()
	d.wait(t, "add node-3")
	var serverWrite tracetest.SpanStub
	for _, sp := range serverSide.exporter.GetSpans() {
		if sp.Name == "health/topic_write Probes" {
			serverWrite = sp
		}
	}
	require.True(t, serverWrite.SpanContext.IsValid(), "the server's span of the client's write")
	assert.Equal(t, probe.SpanContext().SpanID(), serverWrite.Parent.SpanID())
	link := linkOf(t, watcherSide, d.spans["add node-3"])
	assert.Equal(t, serverWrite.SpanContext.SpanID(), link.SpanID(), "the delivery links to the server's span of the write")
	assert.Equal(t, probe.SpanContext().TraceID(), link.TraceID())
}
