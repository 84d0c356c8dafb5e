package framework_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
)

func TestWatchSnapshotThenChanges(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range 3 {
		require.NoError(t, srv.health.Set(health(n, 1, 0)))
	}
	cl := topicClient(t, "1.0.0", []string{srv.URL})
	var adds, updates, deletes atomic.Int64
	inf, err := framework.Watch(timeout(t, 10*time.Second), cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{
		OnAdd:    func(string, *topicmsg.NodeHealth) { adds.Add(1) },
		OnUpdate: func(string, *topicmsg.NodeHealth, *topicmsg.NodeHealth) { updates.Add(1) },
		OnDelete: func(string, *topicmsg.NodeHealth) { deletes.Add(1) },
	})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(timeout(t, 5*time.Second)))
	assert.True(t, inf.HasSynced())
	assert.Equal(t, []string{"node-000", "node-001", "node-002"}, inf.Keys())
	assert.Equal(t, int64(3), adds.Load(), "the snapshot is reported as adds before HasSynced")
	assert.Equal(t, srv.Server.Instance(), inf.Server())

	require.NoError(t, srv.health.Set(health(1, 2, 0)))
	require.NoError(t, srv.health.Delete("node-002"))
	require.NoError(t, srv.health.Set(health(3, 1, 0)))
	requireCacheMatches(t, "informer", inf, srv.health.TopicView, 5*time.Second)
	assert.Equal(t, int64(4), adds.Load())
	assert.Equal(t, int64(1), updates.Load())
	assert.Equal(t, int64(1), deletes.Load())
	got, ok := inf.Get("node-001")
	require.True(t, ok)
	assert.Equal(t, int64(2), got.Score)
	v1, _ := inf.Version("node-001")
	v3, _ := inf.Version("node-003")
	assert.Equal(t, srv.health.Epoch(), v1.Epoch)
	assert.Greater(t, v3.Seq, v1.Seq, "sequence grows with every write of the writer")
}

// TestWatchersConvergeAfterBurst is the level-based watch at work: one
// writer, 100 keys, a burst of writes, and watchers that keep up, that are
// slowed, and whose connections are cut in the middle: every cache ends up
// equal to the writer's final state, and a slowed watcher's queue at the
// server never holds more than one change per key.
func TestWatchersConvergeAfterBurst(t *testing.T) {
	const keys, writes, padding = 100, 2000, 1 << 10
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range keys {
		require.NoError(t, srv.health.Set(health(n, 0, padding)))
	}
	ctx := timeout(t, 30*time.Second)

	type watcher struct {
		name string
		inf  *framework.Informer[topicmsg.NodeHealth]
		cut  *cutTransport
	}
	var watchers []watcher
	start := func(name string, readBuffer int, h framework.InformerHandlers[topicmsg.NodeHealth]) watcher {
		ct := newCutTransport(t, readBuffer)
		cl := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
			c.Transport = ct
			c.Instance = name
		})
		inf, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, h)
		require.NoError(t, err)
		t.Cleanup(inf.Stop)
		w := watcher{name, inf, ct}
		watchers = append(watchers, w)
		return w
	}
	for i := range 4 {
		start("steady-"+string(rune('a'+i)), 0, framework.InformerHandlers[topicmsg.NodeHealth]{})
	}
	slow := func(string, *topicmsg.NodeHealth, *topicmsg.NodeHealth) { time.Sleep(2 * time.Millisecond) }
	var slowed []watcher
	for i := range 2 {
		slowed = append(slowed, start("slow-"+string(rune('a'+i)), 128<<10,
			framework.InformerHandlers[topicmsg.NodeHealth]{OnUpdate: slow}))
	}
	var cut []watcher
	for i := range 2 {
		cut = append(cut, start("cut-"+string(rune('a'+i)), 0, framework.InformerHandlers[topicmsg.NodeHealth]{}))
	}
	for _, w := range watchers {
		require.NoError(t, w.inf.WaitForSync(ctx), w.name)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for i := range writes {
		require.NoError(t, srv.health.Set(health(rng.IntN(keys), int64(i+1), padding)))
		if i == writes/2 {
			for _, w := range cut {
				require.Positive(t, w.cut.cut(), "no connection to cut for %s", w.name)
			}
		}
	}
	st := srv.stats(t, topicmsg.TopicNodeHealth)
	for _, w := range watchers {
		requireCacheMatches(t, w.name, w.inf, srv.health.TopicView, 15*time.Second)
	}
	for _, w := range cut {
		assert.GreaterOrEqual(t, w.inf.Stats().Syncs, int64(2), "%s did not resync after its connection was cut", w.name)
	}
	// The server's queue of every watcher, slowed ones included, stayed
	// bounded by the number of keys, and the slowed ones were sent
	// coalesced state rather than every write.
	var coalesced uint64
	for _, ws := range st.Watchers {
		assert.LessOrEqual(t, ws.MaxQueued, keys, "watcher %s queued more than one change per key", ws.Peer.Instance)
		if ws.Peer.Instance[:4] == "slow" {
			coalesced += ws.Coalesced
		}
	}
	assert.Positive(t, coalesced, "slowed watchers never fell behind: the test did not slow them")
	for _, w := range slowed {
		assert.Less(t, w.inf.Stats().Frames, int64(writes), "%s received every write instead of the latest state", w.name)
	}
}

func TestWatchConvergesAcrossWriterRestart(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range 10 {
		require.NoError(t, srv.health.Set(health(n, 1, 0)))
	}
	oldEpoch := srv.health.Epoch()
	cl := topicClient(t, "1.0.0", []string{srv.URL})
	var deleted atomic.Int64
	inf, err := framework.Watch(context.Background(), cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{
		OnDelete: func(string, *topicmsg.NodeHealth) { deleted.Add(1) },
	})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(timeout(t, 5*time.Second)))

	// The writer restarts: the server process is gone, and its replacement
	// writes a different state (keys 5..14) in a new epoch.
	require.NoError(t, srv.Kill())
	next := startTopicServer(t, srv.Addr, "1.0.0", topicServerOpts{})
	for n := 5; n < 15; n++ {
		require.NoError(t, next.health.Set(health(n, 2, 0)))
	}
	requireCacheMatches(t, "informer", inf, next.health.TopicView, 10*time.Second)
	assert.Equal(t, int64(5), deleted.Load(), "keys the new writer lacks are reported deleted")
	v, _ := inf.Version("node-007")
	assert.NotEqual(t, oldEpoch, v.Epoch)
	assert.Equal(t, next.health.Epoch(), v.Epoch)
	assert.Equal(t, next.Server.Instance(), inf.Server())
}
