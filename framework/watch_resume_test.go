package framework_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// resumeWatch is a watch stream read by hand, with what the protocol gives
// a watcher to resume from.
type resumeWatch struct {
	frames []resumeFrame // every frame but pings, through synced
	synced resumeFrame
}

// resumeFrame is a watch frame read by hand, with the fields revisions
// added.
type resumeFrame struct {
	Type       string          `json:"type"`
	Key        string          `json:"key"`
	Seq        uint64          `json:"seq"`
	Rev        uint64          `json:"rev"`
	Object     json.RawMessage `json:"object"`
	WriterLost bool            `json:"writerLost"`
	Instance   string          `json:"instance"`
	History    string          `json:"history"`
	Resumed    *bool           `json:"resumed"`
	Writer     *bool           `json:"writer"`
}

func (f resumeFrame) point() string { return fmt.Sprintf("%s.%d", f.History, f.Rev) }

func readResumeFrame(t testing.TB, br *bufio.Reader) resumeFrame {
	t.Helper()
	for {
		line, err := br.ReadBytes('\n')
		require.NoError(t, err, "reading a frame")
		var f resumeFrame
		require.NoError(t, json.Unmarshal(line, &f), "frame %q", line)
		if f.Type != "ping" {
			return f
		}
	}
}

// watchUntilSynced opens a stream (from a resume point, unless since is
// empty) and reads it through its synced frame; the stream stays open
// until the test ends, and the returned reader reads on.
func watchUntilSynced(t testing.TB, srv *topicServer, token, since string) (resumeWatch, *bufio.Reader) {
	t.Helper()
	url := srv.URL + protocol.WatchPath("topics", "1.0.0", topicmsg.TopicNodeHealth)
	if since != "" {
		url += "?since=" + since
	}
	_, br := rawWatch(t, url, token)
	var w resumeWatch
	for {
		f := readResumeFrame(t, br)
		if f.Type == "synced" {
			w.synced = f
			return w, br
		}
		w.frames = append(w.frames, f)
	}
}

// apply plays a stream's frames over a cache of key → object.
func apply(cache map[string]string, frames []resumeFrame) {
	for _, f := range frames {
		switch f.Type {
		case "set":
			cache[f.Key] = string(f.Object)
		case "delete":
			delete(cache, f.Key)
		}
	}
}

func topicContents(t testing.TB, view *framework.TopicView[topicmsg.NodeHealth]) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range view.Keys() {
		obj, ok := view.Get(k)
		require.True(t, ok)
		b, err := json.Marshal(obj)
		require.NoError(t, err)
		out[k] = string(b)
	}
	return out
}

func keysOf(frames []resumeFrame) []string {
	var out []string
	for _, f := range frames {
		out = append(out, f.Type+" "+f.Key)
	}
	sort.Strings(out)
	return out
}

// TestWatchResumeCarriesOnlyWhatChanged: frames carry revisions, and a
// stream reopened from the last one it saw (in a new session of the same
// client, as after a restart of the watcher's connection) is sent only the
// keys changed since: sets of changed and new keys, deletes of deleted
// ones, then synced with resumed true. Played over the first stream's
// cache, it gives the topic exactly, deleted keys included.
func TestWatchResumeCarriesOnlyWhatChanged(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range 6 {
		require.NoError(t, srv.health.Set(health(n, 1, 0)))
	}
	_, token := rawWatchToken(t, srv)
	first, br := watchUntilSynced(t, srv, token, "")
	require.Len(t, first.frames, 6)
	require.NotNil(t, first.synced.Resumed)
	assert.False(t, *first.synced.Resumed, "a stream without a resume point starts from a snapshot")
	require.NotNil(t, first.synced.Writer)
	assert.True(t, *first.synced.Writer, "the server's writer is attached")
	assert.Equal(t, srv.Server.Instance(), first.synced.Instance)
	assert.NotEmpty(t, first.synced.History)
	var newest uint64
	for _, f := range first.frames {
		assert.NotZero(t, f.Rev, "%s carries its revision", f.Key)
		newest = max(newest, f.Rev)
	}
	assert.Equal(t, newest, first.synced.Rev, "synced names the snapshot's revision")
	cache := map[string]string{}
	apply(cache, first.frames)

	// A change after synced carries the next revision.
	require.NoError(t, srv.health.Set(health(0, 2, 0)))
	f := readResumeFrame(t, br)
	require.Equal(t, "set", f.Type)
	assert.Equal(t, first.synced.Rev+1, f.Rev)
	apply(cache, []resumeFrame{f})
	point := fmt.Sprintf("%s.%d", first.synced.History, f.Rev)

	// While the watcher is away: an update, two deletes, a key deleted and
	// set again, a new key.
	require.NoError(t, srv.health.Set(health(1, 3, 0)))
	require.NoError(t, srv.health.Delete("node-002"))
	require.NoError(t, srv.health.Delete("node-003"))
	require.NoError(t, srv.health.Delete("node-004"))
	require.NoError(t, srv.health.Set(health(4, 5, 0)))
	require.NoError(t, srv.health.Set(health(7, 1, 0)))

	_, token2 := rawWatchToken(t, srv) // a new session of the same client instance
	second, _ := watchUntilSynced(t, srv, token2, point)
	require.NotNil(t, second.synced.Resumed)
	assert.True(t, *second.synced.Resumed)
	assert.Equal(t, []string{"delete node-002", "delete node-003", "set node-001", "set node-004", "set node-007"}, keysOf(second.frames),
		"only what changed since the resume point, each key once")
	for n := 1; n < len(second.frames); n++ {
		assert.Less(t, second.frames[n-1].Rev, second.frames[n].Rev, "frames in revision order")
	}
	apply(cache, second.frames)
	assert.Equal(t, topicContents(t, srv.health.TopicView), cache, "the resumed cache is the topic")

	// Resuming from the newest revision sends nothing but synced.
	third, _ := watchUntilSynced(t, srv, token2, second.synced.point())
	assert.True(t, *third.synced.Resumed)
	assert.Empty(t, third.frames)

	// A resume point of another history (another server process), one
	// from the future, or one that is not a resume point: a snapshot,
	// never an error.
	for _, since := range []string{"0123456789abcdef.3", first.synced.History + ".999999", "nonsense"} {
		w, _ := watchUntilSynced(t, srv, token2, since)
		assert.False(t, *w.synced.Resumed, since)
		assert.Len(t, w.frames, srv.health.Len(), since)
	}
}

// TestWatchResumeBeyondTheTombstonesIsASnapshot: a resume point older than
// the deletes the topic remembers, by count or by age, is answered with a
// snapshot and resumed false; played over the stale cache as a snapshot
// (it replaces the cache), it drops the deleted keys, and nothing deleted
// comes back.
func TestWatchResumeBeyondTheTombstonesIsASnapshot(t *testing.T) {
	clock := clockwork.NewFakeClock()
	advanceClockAtCleanup(t, clock)
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{
		cfg:    func(c *framework.ServerConfig) { c.Clock = clock },
		topics: []framework.TopicOption{framework.WithTombstones(2, time.Minute)},
	})
	for n := range 5 {
		require.NoError(t, srv.health.Set(health(n, 1, 0)))
	}
	_, token := rawWatchToken(t, srv)
	first, _ := watchUntilSynced(t, srv, token, "")

	// Two deletes fit in the tombstones: resumed.
	require.NoError(t, srv.health.Delete("node-000"))
	require.NoError(t, srv.health.Delete("node-001"))
	w, _ := watchUntilSynced(t, srv, token, first.synced.point())
	assert.True(t, *w.synced.Resumed)
	assert.Equal(t, []string{"delete node-000", "delete node-001"}, keysOf(w.frames))

	// A third forgets the first: from the first point, a snapshot.
	require.NoError(t, srv.health.Delete("node-002"))
	w, _ = watchUntilSynced(t, srv, token, first.synced.point())
	assert.False(t, *w.synced.Resumed)
	assert.Equal(t, []string{"set node-003", "set node-004"}, keysOf(w.frames), "the snapshot lacks every deleted key")
	recent := w.synced.point()

	// Age: a delete older than a minute is forgotten too. The session
	// lapses on the way; the client handshakes again, and resumes in its
	// new session.
	require.NoError(t, srv.health.Delete("node-003"))
	w, _ = watchUntilSynced(t, srv, token, recent)
	assert.True(t, *w.synced.Resumed, "within the minute")
	assert.Equal(t, []string{"delete node-003"}, keysOf(w.frames))
	clock.Advance(time.Minute + time.Second)
	_, token = rawWatchToken(t, srv)
	w, _ = watchUntilSynced(t, srv, token, recent)
	assert.False(t, *w.synced.Resumed, "the minute passed")
	assert.Equal(t, []string{"set node-004"}, keysOf(w.frames))
}

// TestInformerResumesAfterACut: an informer whose connection is cut
// reopens its stream from its resume point, is sent only what changed, and
// its handlers see exactly those changes; its cache is the topic, with
// deleted keys gone.
func TestInformerResumesAfterACut(t *testing.T) {
	const keys = 200
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	for n := range keys {
		require.NoError(t, srv.health.Set(health(n, 1, 64)))
	}
	ct := newCutTransport(t, 0)
	cl := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Transport = ct })
	var mu sync.Mutex
	var events []string
	ev := func(kind, key string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, kind+" "+key)
	}
	ctx := timeout(t, 20*time.Second)
	inf, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{
		OnAdd:    func(k string, _ *topicmsg.NodeHealth) { ev("add", k) },
		OnUpdate: func(k string, _, _ *topicmsg.NodeHealth) { ev("update", k) },
		OnDelete: func(k string, _ *topicmsg.NodeHealth) { ev("delete", k) },
	})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))
	count := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return int64(len(events))
	}
	require.NoError(t, srv.health.Set(health(0, 2, 64)))
	requireCacheMatches(t, "informer", inf, srv.health.TopicView, 5*time.Second)
	// The handler is called after the cache changes: its event is waited
	// for, so that it is not counted among the changes after the cut.
	requireCount(t, keys+1, count, "the snapshot's adds and node-000's update")
	mu.Lock()
	events = nil
	mu.Unlock()
	before := inf.Stats()

	// Block the reconnect until the changes are made, then let it through.
	ct.stall()
	require.Positive(t, ct.cut())
	require.NoError(t, srv.health.Set(health(1, 2, 64)))
	require.NoError(t, srv.health.Delete("node-002"))
	require.NoError(t, srv.health.Set(health(keys, 1, 64)))
	ct.resume()

	require.Eventually(t, func() bool { return inf.Stats().Resumes > before.Resumes }, 10*time.Second, 5*time.Millisecond)
	requireCacheMatches(t, "informer", inf, srv.health.TopicView, 5*time.Second)
	// The resumed stream's synced frame comes after its changes, and each
	// change's handler is called after the cache changes: both are waited
	// for once the cache matches.
	requireCount(t, 4, func() int64 { return inf.Stats().Frames - before.Frames }, "three changes and synced")
	requireCount(t, 3, count, "one event per change")
	after := inf.Stats()
	assert.Equal(t, before.Syncs, after.Syncs, "no snapshot")
	mu.Lock()
	sort.Strings(events)
	assert.Equal(t, []string{"add node-200", "delete node-002", "update node-001"}, events)
	mu.Unlock()
	_, ok := inf.Get("node-002")
	assert.False(t, ok, "the deleted key stays deleted")
}
