package framework_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"

	"github.com/lockstep-dev/lockstep/internal/benchhook"
)

// seenObjects records what one informer's handlers were handed.
type seenObjects struct {
	mu   sync.Mutex
	objs map[string][]*topicmsg.NodeHealth
}

func (s *seenObjects) handlers() framework.InformerHandlers[topicmsg.NodeHealth] {
	record := func(key string, obj *topicmsg.NodeHealth) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.objs == nil {
			s.objs = map[string][]*topicmsg.NodeHealth{}
		}
		s.objs[key] = append(s.objs[key], obj)
	}
	return framework.InformerHandlers[topicmsg.NodeHealth]{
		OnAdd:    record,
		OnUpdate: func(key string, _, obj *topicmsg.NodeHealth) { record(key, obj) },
	}
}

// requireLast waits until the handlers were last called for key with
// want, the object the informer's cache holds: an informer calls its
// handlers after its cache changes, so a test that saw the cache hold an
// object can still find the handler's call for it to come.
func (s *seenObjects) requireLast(t *testing.T, key string, want *topicmsg.NodeHealth) {
	t.Helper()
	require.Eventually(t, func() bool { return s.last(key) == want }, 5*time.Second, time.Millisecond,
		"the handlers were not called with %s as the cache holds it", key)
}

func (s *seenObjects) last(key string) *topicmsg.NodeHealth {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.objs[key]; len(o) > 0 {
		return o[len(o)-1]
	}
	return nil
}

// TestInformersOfOneClientShareOneStream shows the feed: the informers of
// one client watching the same topic share one watch stream (the server
// holds one watcher), yet each decodes every change into objects of its
// own; an informer started after the sync starts from the feed's frames
// without a stream of its own; stopping one leaves the others served, and
// the stream ends with the last.
func TestInformersOfOneClientShareOneStream(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range 5 {
		require.NoError(t, srv.health.Set(health(n, 1, 0)))
	}
	cl := topicClient(t, "1.0.0", []string{srv.URL})
	ctx := timeout(t, 10*time.Second)
	watchers := func() int { return len(srv.stats(t, topicmsg.TopicNodeHealth).Watchers) }

	var seenA, seenB, seenC seenObjects
	a, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, seenA.handlers())
	require.NoError(t, err)
	b, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, seenB.handlers())
	require.NoError(t, err)
	require.NoError(t, framework.WaitForCacheSync(ctx, a, b))
	assert.Equal(t, 1, watchers(), "two informers of one client, one stream")

	require.NoError(t, srv.health.Set(health(2, 2, 0)))
	requireCacheMatches(t, "a", a, srv.health.TopicView, 5*time.Second)
	requireCacheMatches(t, "b", b, srv.health.TopicView, 5*time.Second)
	ga, _ := a.Get("node-002")
	gb, _ := b.Get("node-002")
	require.NotNil(t, ga)
	require.NotNil(t, gb)
	assert.NotSame(t, ga, gb, "each informer decodes into objects of its own")
	seenA.requireLast(t, "node-002", ga)
	seenB.requireLast(t, "node-002", gb)

	// A late informer starts from the feed's frames: no new stream.
	c, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, seenC.handlers())
	require.NoError(t, err)
	require.NoError(t, c.WaitForSync(ctx))
	requireCacheMatches(t, "c", c, srv.health.TopicView, 5*time.Second)
	assert.Equal(t, int64(1), c.Stats().Streams, "the late informer opened no stream of its own")
	assert.Equal(t, 1, watchers())
	assert.NotNil(t, seenC.last("node-004"), "the late informer was told of what it starts with")

	a.Stop()
	require.NoError(t, srv.health.Set(health(3, 4, 0)))
	requireCacheMatches(t, "b after a stopped", b, srv.health.TopicView, 5*time.Second)
	requireCacheMatches(t, "c after a stopped", c, srv.health.TopicView, 5*time.Second)
	got, _ := a.Get("node-003")
	assert.Equal(t, int64(1), got.Score, "a stopped informer's cache stays as it was")

	b.Stop()
	c.Stop()
	require.Eventually(t, func() bool { return watchers() == 0 }, 10*time.Second, 5*time.Millisecond,
		"the stream ends with the last informer")
}

// TestOwnStreamInformerHasAStreamOfItsOwn shows the benchmark-only own-stream option (internal/benchhook): beside a feed's
// informer, an informer with its own stream is a second watcher at the
// server, and both converge.
func TestOwnStreamInformerHasAStreamOfItsOwn(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	require.NoError(t, srv.health.Set(health(0, 1, 0)))
	cl := topicClient(t, "1.0.0", []string{srv.URL})
	ctx := timeout(t, 10*time.Second)
	shared, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{})
	require.NoError(t, err)
	defer shared.Stop()
	own, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{}, benchhook.OwnStream().(framework.WatchOption))
	require.NoError(t, err)
	defer own.Stop()
	require.NoError(t, framework.WaitForCacheSync(ctx, shared, own))
	assert.Len(t, srv.stats(t, topicmsg.TopicNodeHealth).Watchers, 2)
	require.NoError(t, srv.health.Set(health(1, 1, 0)))
	requireCacheMatches(t, "shared", shared, srv.health.TopicView, 5*time.Second)
	requireCacheMatches(t, "own", own, srv.health.TopicView, 5*time.Second)
}

// TestFeedOfAStoppedClientEnds: closing the client stops its informers
// and their feed, and Stop still returns.
func TestFeedOfAStoppedClientEnds(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	require.NoError(t, srv.health.Set(health(0, 1, 0)))
	cl := topicClient(t, "1.0.0", []string{srv.URL})
	ctx := timeout(t, 10*time.Second)
	a, err := framework.Watch(context.Background(), cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{})
	require.NoError(t, err)
	b, err := framework.Watch(context.Background(), cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{})
	require.NoError(t, err)
	require.NoError(t, framework.WaitForCacheSync(ctx, a, b))
	require.NoError(t, cl.Close())
	for _, inf := range []*framework.Informer[topicmsg.NodeHealth]{a, b} {
		select {
		case <-inf.Done():
		case <-ctx.Done():
			t.Fatal("an informer of a closed client did not stop")
		}
		inf.Stop()
	}
	require.Eventually(t, func() bool { return len(srv.stats(t, topicmsg.TopicNodeHealth).Watchers) == 0 },
		5*time.Second, 5*time.Millisecond)
}
