package framework_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
)

// traceKey keys the trace a test's context carries.
type traceKey struct{}

// testPropagator carries the context's trace in the header Test-Trace,
// as a tracing library's propagator carries traceparent.
type testPropagator struct{}

func (testPropagator) Inject(ctx context.Context, h http.Header) {
	if v, _ := ctx.Value(traceKey{}).(string); v != "" {
		h.Set("Test-Trace", v)
	}
}

func (testPropagator) Extract(ctx context.Context, h http.Header) context.Context {
	if v := h.Get("Test-Trace"); v != "" {
		return context.WithValue(ctx, traceKey{}, v)
	}
	return ctx
}

func traced(ctx context.Context, trace string) context.Context {
	return context.WithValue(ctx, traceKey{}, trace)
}

// deliveryTraces records, for each change an informer reports, the trace
// its DeliveryContext carries.
type deliveryTraces struct {
	got chan string
}

func newDeliveryTraces() *deliveryTraces { return &deliveryTraces{got: make(chan string, 32)} }

func handlersOf[T any](d *deliveryTraces, inf **framework.Informer[T], ready <-chan struct{}) framework.InformerHandlers[T] {
	report := func(kind, key string) {
		<-ready
		trace, _ := (*inf).DeliveryContext().Value(traceKey{}).(string)
		d.got <- kind + " " + key + " " + trace
	}
	return framework.InformerHandlers[T]{
		OnAdd:    func(key string, _ *T) { report("add", key) },
		OnUpdate: func(key string, _, _ *T) { report("update", key) },
		OnDelete: func(key string, _ *T) { report("delete", key) },
	}
}

func (d *deliveryTraces) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-d.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
		return ""
	}
}

func watchTraced[T any](t *testing.T, ctx context.Context, c *framework.Client, topic string) *deliveryTraces {
	t.Helper()
	d := newDeliveryTraces()
	ready := make(chan struct{})
	var inf *framework.Informer[T]
	inf, err := framework.Watch(ctx, c, topic, handlersOf(d, &inf, ready))
	require.NoError(t, err)
	close(ready)
	t.Cleanup(inf.Stop)
	require.NoError(t, inf.WaitForSync(ctx))
	return d
}

// TestTopicChangesCarryTheirWritesTrace: with a Propagator on both sides,
// the trace of the context a change was written with reaches the
// watchers' DeliveryContext: a server-written topic's SetContext and
// DeleteContext, also in the earlier version's form a fork serves; a
// client-written topic's TopicPublisher.Set and Delete. A write without
// one, and a watcher without a Propagator, carry nothing.
func TestTopicChangesCarryTheirWritesTrace(t *testing.T) {
	ctx := timeout(t, 20*time.Second)
	t.Run("server-written, forked", func(t *testing.T) {
		v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
		var nodes *framework.TopicWriter[StatusV2]
		srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
			Propagator: testPropagator{}}, func(s *framework.Server) {
			h := func(context.Context, *StatusV2) (*AckV2, error) { return &AckV2{}, nil }
			framework.HandleUnary(s, v2, "Report", h)
			framework.HandleUnary(s, v2, "Describe", h)
			framework.HandleBatch(s, v2, "ReportMany", h)
			framework.ForkUnary(s, v1, v2, "Report", statusV1ToV2, ackV2ToV1)
			framework.ForkBatch(s, v1, v2, "ReportMany", statusV1ToV2, ackV2ToV1)
			framework.HandleUnary(s, v1, "OnlyInOldV1", func(context.Context, *StatusV1) (*AckV1, error) { return &AckV1{}, nil })
			nodes = framework.ServeTopic[StatusV2](s, v2, "Nodes")
			framework.ForkTopic(s, v1, nodes, statusV2ToV1)
		})
		cfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}, Propagator: testPropagator{}}
		current := watchTraced[StatusV2](t, ctx, frameworktest.NewClient(t, v2, cfg), "Nodes")
		old := watchTraced[StatusV1](t, ctx, frameworktest.NewClient(t, v1, cfg), "Nodes")
		plain := cfg
		plain.Propagator = nil
		untraced := watchTraced[StatusV2](t, ctx, frameworktest.NewClient(t, v2, plain), "Nodes")

		require.NoError(t, nodes.SetContext(traced(ctx, "set-n1"), ready("n1")))
		for _, d := range []*deliveryTraces{current, old} {
			assert.Equal(t, "add n1 set-n1", d.next(t))
		}
		assert.Equal(t, "add n1 ", untraced.next(t), "a watcher without a Propagator")
		require.NoError(t, nodes.DeleteContext(traced(ctx, "delete-n1"), "n1"))
		for _, d := range []*deliveryTraces{current, old} {
			assert.Equal(t, "delete n1 delete-n1", d.next(t))
		}
		untraced.next(t)
		require.NoError(t, nodes.Set(ready("n2")))
		for _, d := range []*deliveryTraces{current, old} {
			assert.Equal(t, "add n2 ", d.next(t), "a write without a trace")
		}
	})
	t.Run("client-written", func(t *testing.T) {
		srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{cfg: func(c *framework.ServerConfig) {
			c.Propagator = testPropagator{}
		}})
		withProp := func(c *framework.ClientConfig) { c.Propagator = testPropagator{} }
		d := watchTraced[topicmsg.Lease](t, ctx, topicClient(t, "1.0.0", []string{srv.URL}, withProp), topicmsg.TopicLease)
		pub, err := framework.NewTopicPublisher[topicmsg.Lease](topicClient(t, "1.0.0", []string{srv.URL}, withProp), topicmsg.TopicLease)
		require.NoError(t, err)
		defer pub.Close()
		require.NoError(t, pub.Set(traced(ctx, "lease-a"), &topicmsg.Lease{Node: "node-a", Renewals: 1}))
		assert.Equal(t, "add node-a lease-a", d.next(t))
		require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 2}))
		assert.Equal(t, "update node-a ", d.next(t))
		require.NoError(t, pub.Delete(traced(ctx, "gone-a"), "node-a"))
		assert.Equal(t, "delete node-a gone-a", d.next(t))
	})
}
