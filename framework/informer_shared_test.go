package framework_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
)

// readiness files a node's health under "true" or "false".
func readiness(_ string, h *topicmsg.NodeHealth) []string {
	return []string{strconv.FormatBool(h.Ready)}
}

// TestSharedInformersShareOneStream: two parts of one process ask a
// factory for the same topic, each with its handler, one with an index;
// the server serves one stream, both handlers see every change, and the
// lister answers Get, List and ByIndex from the one cache.
func TestSharedInformersShareOneStream(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range 4 {
		require.NoError(t, srv.health.Set(health(n, int64(n), 0))) // 0 and 2 ready
	}
	cl := topicClient(t, "1.0.0", []string{srv.URL})
	ctx := timeout(t, 20*time.Second)
	f := framework.NewInformerFactory(cl, 0)
	defer f.Shutdown()

	a, err := framework.ForTopic[topicmsg.NodeHealth](f, topicmsg.TopicNodeHealth)
	require.NoError(t, err)
	b, err := framework.ForTopic[topicmsg.NodeHealth](f, topicmsg.TopicNodeHealth)
	require.NoError(t, err)
	require.Same(t, a, b, "one shared informer per topic")
	_, err = framework.ForTopic[topicmsg.Lease](f, topicmsg.TopicNodeHealth)
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "the same topic as another type")
	_, err = framework.ForTopic[topicmsg.Lease](f, "NoSuchTopic")
	assert.Equal(t, framework.CodeNotFound, framework.CodeOf(err))

	require.NoError(t, a.AddIndexers(framework.Indexers[topicmsg.NodeHealth]{"ready": readiness}))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(a.AddIndexers(framework.Indexers[topicmsg.NodeHealth]{"ready": readiness})))

	var mu sync.Mutex
	seen := map[string][]string{} // handler → events
	record := func(name string) framework.InformerHandlers[topicmsg.NodeHealth] {
		ev := func(kind, key string) {
			mu.Lock()
			defer mu.Unlock()
			seen[name] = append(seen[name], kind+" "+key)
		}
		return framework.InformerHandlers[topicmsg.NodeHealth]{
			OnAdd:    func(k string, _ *topicmsg.NodeHealth) { ev("add", k) },
			OnUpdate: func(k string, _, _ *topicmsg.NodeHealth) { ev("update", k) },
			OnDelete: func(k string, _ *topicmsg.NodeHealth) { ev("delete", k) },
		}
	}
	a.AddEventHandler(record("a"))
	regB := b.AddEventHandler(record("b"))
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	require.NoError(t, framework.WaitForCacheSync(ctx, a, b))

	l := a.Lister()
	assert.Equal(t, []string{"node-000", "node-001", "node-002", "node-003"}, l.Keys())
	got, ok := l.Get("node-003")
	require.True(t, ok)
	assert.Equal(t, int64(3), got.Score)
	ready, err := l.ByIndex("ready", "true")
	require.NoError(t, err)
	require.Len(t, ready, 2)
	assert.Equal(t, "node-000", ready[0].Node)
	assert.Equal(t, "node-002", ready[1].Node)
	_, err = l.ByIndex("zone", "a")
	assert.Equal(t, framework.CodeNotFound, framework.CodeOf(err))

	// node-001 turns ready, node-002 goes away: the index follows.
	require.NoError(t, srv.health.Set(health(1, 4, 0)))
	require.NoError(t, srv.health.Delete("node-002"))
	require.Eventually(t, func() bool {
		r, _ := l.ByIndex("ready", "true")
		return len(r) == 2 && r[0].Node == "node-000" && r[1].Node == "node-001"
	}, 5*time.Second, 5*time.Millisecond)
	values, err := l.IndexValues("ready")
	require.NoError(t, err)
	assert.Equal(t, []string{"false", "true"}, values, "node-003 is not ready")
	assert.Len(t, l.List(), 3)

	// One stream for both, at the server.
	assert.Len(t, srv.stats(t, topicmsg.TopicNodeHealth).Watchers, 1)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen["a"]) == 6 && len(seen["b"]) == 6
	}, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	assert.Equal(t, seen["a"], seen["b"], "both handlers see the same changes in the same order")
	assert.Equal(t, []string{"update node-001", "delete node-002"}, seen["a"][4:])
	mu.Unlock()

	// A handler added late is told of what is held; a removed one hears no more.
	c := record("c")
	a.AddEventHandler(c)
	mu.Lock()
	assert.Equal(t, []string{"add node-000", "add node-001", "add node-003"}, seen["c"])
	mu.Unlock()
	b.RemoveEventHandler(regB)
	require.NoError(t, srv.health.Set(health(5, 1, 0)))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen["c"]) == 4
	}, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	assert.Len(t, seen["a"], 7)
	assert.Len(t, seen["b"], 6, "a removed handler is not called")
	mu.Unlock()
}

// TestSharedInformerResync: a handler with a resync period is handed every
// cached object again each period, on the client's clock, as an update
// whose old and new object are the same; one without a period is not.
func TestSharedInformerResync(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range 3 {
		require.NoError(t, srv.health.Set(health(n, 1, 0)))
	}
	fc := clockwork.NewFakeClock()
	cl := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Clock = fc
		c.Heartbeats = framework.NewHeartbeats(nil, nil) // sessions renewed on real time
	})
	ctx := timeout(t, 20*time.Second)
	f := framework.NewInformerFactory(cl, time.Minute)
	defer f.Shutdown()
	s, err := framework.ForTopic[topicmsg.NodeHealth](f, topicmsg.TopicNodeHealth)
	require.NoError(t, err)
	var mu sync.Mutex
	var resynced []string // keys handed over by resyncs, in order
	resyncs := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(resynced)
	}
	var quietUpdates atomic.Int64
	s.AddEventHandler(framework.InformerHandlers[topicmsg.NodeHealth]{
		OnUpdate: func(key string, old, new *topicmsg.NodeHealth) {
			if old == new {
				mu.Lock()
				defer mu.Unlock()
				resynced = append(resynced, key)
			}
		},
	})
	s.AddEventHandlerWithResyncPeriod(framework.InformerHandlers[topicmsg.NodeHealth]{
		OnUpdate: func(string, *topicmsg.NodeHealth, *topicmsg.NodeHealth) { quietUpdates.Add(1) },
	}, 0)
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	assert.Zero(t, resyncs(), "no resync before the period")

	require.Eventually(t, func() bool {
		fc.Advance(time.Minute)
		return resyncs() >= 6
	}, 10*time.Second, 10*time.Millisecond)
	// A resync hands its objects over one by one, and the one the last
	// Advance started may still be under way: it ends without the clock.
	require.Eventually(t, func() bool { return resyncs()%3 == 0 }, 10*time.Second, time.Millisecond,
		"each resync hands over all three objects")
	mu.Lock()
	for n, key := range resynced {
		assert.Equal(t, fmt.Sprintf("node-%03d", n%3), key, "each resync hands over all three objects, in key order: %v", resynced)
	}
	mu.Unlock()
	assert.Zero(t, quietUpdates.Load(), "a handler without a period is not resynced")
}
