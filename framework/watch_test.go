package framework_test

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
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
	requireCount(t, 4, adds.Load, "adds")
	requireCount(t, 1, updates.Load, "updates")
	requireCount(t, 1, deletes.Load, "deletes")
	got, ok := inf.Get("node-001")
	require.True(t, ok)
	assert.Equal(t, int64(2), got.Score)
	v1, _ := inf.Version("node-001")
	v3, _ := inf.Version("node-003")
	assert.Equal(t, srv.health.Epoch(), v1.Epoch)
	assert.Greater(t, v3.Seq, v1.Seq, "sequence grows with every write of the writer")
}

// TestWatchersConvergeAfterBurst is the level-based watch at work: one
// writer, 100 keys, a burst of writes, and watchers that keep up, whose
// handlers are slow, whose processes stop reading during the burst, and
// whose connections are cut in the middle: every cache ends up equal to the
// writer's final state, and no queue, at the server or in an informer, ever
// holds more than one change per key.
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
		t.Cleanup(ct.resume) // first: a failure must not leave Stop waiting on a stalled read
		w := watcher{name, inf, ct}
		watchers = append(watchers, w)
		return w
	}
	for i := range 4 {
		start("steady-"+string(rune('a'+i)), 0, framework.InformerHandlers[topicmsg.NodeHealth]{})
	}
	// The slowed watchers' handlers are held until the burst is written:
	// their informers must fall behind however fast the machine runs the
	// writer, and hand them the latest state instead of every write.
	var slowed []watcher
	var slowCalls [2]atomic.Int64
	burstWritten := make(chan struct{})
	for i := range 2 {
		slow := func(string, *topicmsg.NodeHealth, *topicmsg.NodeHealth) {
			slowCalls[i].Add(1)
			select {
			case <-burstWritten:
			case <-ctx.Done():
			}
		}
		slowed = append(slowed, start("slow-"+string(rune('a'+i)), 0,
			framework.InformerHandlers[topicmsg.NodeHealth]{OnUpdate: slow}))
	}
	var cut, stalled []watcher
	for i := range 2 {
		cut = append(cut, start("cut-"+string(rune('a'+i)), 0, framework.InformerHandlers[topicmsg.NodeHealth]{}))
	}
	for i := range 2 {
		stalled = append(stalled, start("stalled-"+string(rune('a'+i)), 0, framework.InformerHandlers[topicmsg.NodeHealth]{}))
	}
	for _, w := range watchers {
		require.NoError(t, w.inf.WaitForSync(ctx), w.name)
	}
	// A synced informer may count its snapshot's frames a moment later.
	var slowedFrames [2]int64
	for i, w := range slowed {
		require.Eventually(t, func() bool { return w.inf.Stats().Frames >= keys },
			untilDone(ctx), time.Millisecond, "%s never counted its snapshot", w.name)
		slowedFrames[i] = w.inf.Stats().Frames
	}

	// The stalled watchers' processes stop reading for the burst: their
	// connections fill and changes wait at the server.
	for _, w := range stalled {
		w.cut.stall()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range writes {
		require.NoError(t, srv.health.Set(health(rng.IntN(keys), int64(i+1), padding)))
		if i == 0 {
			// Every slowed handler holds the burst's first change before
			// the rest is written, so on a busy machine the burst cannot
			// end before the slowed informers fall behind.
			require.Eventually(t, func() bool { return slowCalls[0].Load() > 0 && slowCalls[1].Load() > 0 },
				30*time.Second, time.Millisecond, "the slowed handlers were never handed the burst's first change")
		}
		if i == writes/2 {
			for _, w := range cut {
				require.Positive(t, w.cut.cut(), "no connection to cut for %s", w.name)
			}
		}
	}
	// The burst can be written before the server has sent it: the slowed
	// handlers are held until their informers have read more of it than
	// there are keys (and the synced marker), so some key changed again
	// while its change waited.
	for i, w := range slowed {
		require.Eventually(t, func() bool { return w.inf.Stats().Frames-slowedFrames[i] > keys+1 },
			untilDone(ctx), time.Millisecond, "%s never read the burst", w.name)
	}
	close(burstWritten)
	st := srv.stats(t, topicmsg.TopicNodeHealth)
	for _, w := range stalled {
		assert.Less(t, w.inf.Stats().Frames, int64(keys+writes/10), "%s read the burst: the test did not stall it", w.name)
		w.cut.resume()
	}
	for _, w := range watchers {
		requireCacheMatches(t, w.name, w.inf, srv.health.TopicView, 15*time.Second)
	}
	for _, w := range cut {
		st := w.inf.Stats()
		assert.GreaterOrEqual(t, st.Resumes, int64(1), "%s did not resume after its connection was cut (%d snapshots)", w.name, st.Syncs)
	}
	// The server's queue of every watcher stayed bounded by the number of
	// keys; so did the slowed informers' queues for their handlers, which
	// were handed the latest state instead of every write.
	for _, ws := range st.Watchers {
		assert.LessOrEqual(t, ws.MaxQueued, keys, "watcher %s queued more than one change per key", ws.Peer.Instance)
		if strings.HasPrefix(ws.Peer.Instance, "stalled") {
			assert.Less(t, ws.Frames, uint64(writes), "%s was sent every write instead of the latest state", ws.Peer.Instance)
		}
	}
	for i, w := range slowed {
		s := w.inf.Stats()
		assert.LessOrEqual(t, s.MaxQueued, keys, "%s queued more than one change per key", w.name)
		assert.Positive(t, s.Coalesced, "%s never fell behind: the test did not slow it", w.name)
		assert.Less(t, slowCalls[i].Load(), int64(writes), "%s was handed every write instead of the latest state", w.name)
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
	// holds a different state (keys 5..14) in a new epoch from its start,
	// so the informer's resync sees that state whole however soon it
	// reconnects.
	require.NoError(t, srv.Kill())
	next := startTopicServer(t, srv.Addr, "1.0.0", topicServerOpts{state: func(ts *topicServer) {
		for n := 5; n < 15; n++ {
			require.NoError(t, ts.health.Set(health(n, 2, 0)))
		}
	}})
	requireCacheMatches(t, "informer", inf, next.health.TopicView, 10*time.Second)
	requireCount(t, 5, deleted.Load, "keys the new writer lacks are reported deleted")
	v, _ := inf.Version("node-007")
	assert.NotEqual(t, oldEpoch, v.Epoch)
	assert.Equal(t, next.health.Epoch(), v.Epoch)
	assert.Equal(t, next.Server.Instance(), inf.Server())
}

// TestWatcherOfReplicasMovesOnDrain shows what a watcher of a replicated
// server sees: the topic of the one replica it is connected to. When that
// replica drains, the informer moves to the other and its cache becomes
// that replica's topic, keys only the first held reported deleted.
func TestWatcherOfReplicasMovesOnDrain(t *testing.T) {
	a := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	b := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range 4 {
		require.NoError(t, a.health.Set(health(n, 1, 0)))
	}
	for n := 2; n < 6; n++ {
		require.NoError(t, b.health.Set(health(n, 2, 0)))
	}
	cl := topicClient(t, "1.0.0", []string{a.URL, b.URL})
	ctx := timeout(t, 10*time.Second)
	require.Eventually(t, func() bool {
		ready := 0
		for _, e := range cl.Endpoints() {
			if e.State == "ready" {
				ready++
			}
		}
		return ready == 2
	}, 5*time.Second, 5*time.Millisecond)
	var deleted atomic.Int64
	inf, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{
		OnDelete: func(string, *topicmsg.NodeHealth) { deleted.Add(1) },
	})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))

	first, other := a, b
	if inf.Server() == b.Server.Instance() {
		first, other = b, a
	}
	requireCacheMatches(t, "informer", inf, first.health.TopicView, 5*time.Second)
	require.NoError(t, first.Stop())
	requireCacheMatches(t, "informer", inf, other.health.TopicView, 5*time.Second)
	assert.Equal(t, other.Server.Instance(), inf.Server())
	requireCount(t, 2, deleted.Load, "the two keys only the drained replica held are reported deleted")
	requireCount(t, 2, func() int64 { return inf.Stats().Syncs }, "syncs: the first replica's snapshot, then the other's")
}

// TestOverflowingWatcherResyncs covers the one case in which a stream's
// queue could outgrow the topic: a writer churning through more distinct
// keys than the topic may hold while a watcher is stalled. The stream ends
// and the watcher converges from a fresh snapshot.
func TestOverflowingWatcherResyncs(t *testing.T) {
	const padding = 64 << 10
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{topics: []framework.TopicOption{framework.WithMaxKeys(4)}})
	for n := range 4 {
		require.NoError(t, srv.health.Set(health(n, 0, padding)))
	}
	ct := newCutTransport(t, 128<<10)
	cl := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Transport = ct })
	ctx := timeout(t, 10*time.Second)
	inf, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{})
	require.NoError(t, err)
	defer inf.Stop()
	defer ct.resume() // a failure must not leave Stop waiting on a stalled read
	require.NoError(t, inf.WaitForSync(ctx))

	// Stall the watcher's process, then write until its connection is
	// full and changes wait at the server.
	ct.stall()
	queued := func() int {
		st := srv.stats(t, topicmsg.TopicNodeHealth)
		if len(st.Watchers) == 0 {
			return 0
		}
		return st.Watchers[0].Queued
	}
	for gen := int64(1); queued() == 0; gen++ {
		require.Less(t, gen, int64(1000), "the stalled watcher's connection never filled")
		require.NoError(t, srv.health.Set(health(int(gen%4), gen, padding)))
		// Nothing marks the round that blocks, so the writes are paced on
		// real time until the connection is full.
		time.Sleep(time.Millisecond) // real time: each write goes out in a round of its own
	}
	// Churn through distinct keys, never holding more than four.
	for n := 4; n < 20; n++ {
		require.NoError(t, srv.health.Delete(health(n-4, 0, 0).Node))
		require.NoError(t, srv.health.Set(health(n, 1, padding)))
	}
	ct.resume()
	requireCacheMatches(t, "informer", inf, srv.health.TopicView, 5*time.Second)
	// The informer counts a sync after its cache changes.
	require.Eventually(t, func() bool { return inf.Stats().Syncs >= 2 }, 5*time.Second, time.Millisecond,
		"the overflowing stream did not end in a resync")
	for _, ws := range srv.stats(t, topicmsg.TopicNodeHealth).Watchers {
		assert.LessOrEqual(t, ws.MaxQueued, 8, "a stream queued more than twice the key limit")
	}
}

func TestNoGoroutineLeaksAsWatchersWritersAndServersComeAndGo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := topicContract(t, "1.0.0")
	ctx := timeout(t, 20*time.Second)
	addr := "127.0.0.1:0"
	for round := range 3 {
		// The server is run by hand: the test stops it itself, before
		// looking for goroutines.
		srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
			SessionTTL: 2 * time.Second, Heartbeat: 200 * time.Millisecond, Logger: frameworktest.Quiet()})
		require.NoError(t, err)
		healthTopic := framework.ServeTopic[topicmsg.NodeHealth](srv, c, topicmsg.TopicNodeHealth)
		framework.ServeClientTopic[topicmsg.Lease](srv, c, topicmsg.TopicLease)
		framework.ServeOtherTopics(srv, c)
		var l net.Listener
		require.Eventually(t, func() bool { l, err = net.Listen("tcp", addr); return err == nil }, 5*time.Second, 10*time.Millisecond)
		addr = l.Addr().String()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()

		tr := framework.NewTransport(nil)
		newClient := func(instance string) *framework.Client {
			cl, err := framework.NewClient(c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Endpoints: []string{"http://" + addr}, Instance: instance, Transport: tr, Logger: frameworktest.Quiet()})
			require.NoError(t, err)
			return cl
		}
		watchers := newClient("watchers")
		var infs []*framework.Informer[topicmsg.NodeHealth]
		for range 5 {
			inf, err := framework.Watch(ctx, watchers, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{})
			require.NoError(t, err)
			infs = append(infs, inf)
		}
		writer := newClient("writer")
		pub, err := framework.NewTopicPublisher[topicmsg.Lease](writer, topicmsg.TopicLease)
		require.NoError(t, err)
		for n := range 20 {
			require.NoError(t, healthTopic.Set(health(n%7, int64(n), 0)))
			require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: int64(n)}))
		}
		for _, inf := range infs {
			requireCacheMatches(t, "informer", inf, healthTopic.TopicView, 5*time.Second)
		}
		infs[0].Stop()
		require.NoError(t, pub.Close())
		if round%2 == 0 {
			require.NoError(t, srv.Close()) // streams cut while informers still run
		} else {
			require.NoError(t, srv.Shutdown(ctx))
		}
		require.NoError(t, <-served)
		for _, inf := range infs[1:] {
			inf.Stop()
		}
		require.NoError(t, watchers.Close())
		require.NoError(t, writer.Close())
		tr.CloseIdleConnections()
	}
}

// untilDone is the time left before ctx's deadline, so that a wait inside
// a test bounded by ctx says what it waited for instead of outliving it.
func untilDone(ctx context.Context) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return time.Minute
	}
	return time.Until(deadline)
}
