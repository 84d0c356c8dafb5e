package framework_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// heartbeatTopics renews a session by hand and returns what the answer says
// of the topics' writers, by topic.
func heartbeatTopics(t testing.TB, url, token string) map[string]bool {
	t.Helper()
	ans := doRaw(t, http.MethodPost, url+protocol.PathHeartbeat, token, "")
	require.Equal(t, http.StatusOK, ans.status, ans.body)
	var body struct {
		Topics []struct {
			Topic  string `json:"topic"`
			Writer bool   `json:"writer"`
		} `json:"topics"`
	}
	require.NoError(t, json.Unmarshal([]byte(ans.body), &body))
	out := map[string]bool{}
	for _, tp := range body.Topics {
		out[tp.Topic] = tp.Writer
	}
	return out
}

// TestServersSayWhetherATopicHasAWriter: the synced frame, heartbeat
// answers and the status say whether each topic has a live writer: a
// server-written topic while its writer is attached, a client-written one
// while some client writes it.
func TestServersSayWhetherATopicHasAWriter(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{topics: []framework.TopicOption{framework.WithWriterDetached()}})
	_, token := rawWatchToken(t, srv)
	w, _ := watchUntilSynced(t, srv, token, "")
	assert.False(t, *w.synced.Writer, "the writer starts detached")
	assert.Equal(t, map[string]bool{topicmsg.TopicNodeHealth: false, topicmsg.TopicLease: false, topicmsg.TopicCapacity: false,
		topicmsg.TopicNodeStatus: false, topicmsg.TopicAssignment: false},
		heartbeatTopics(t, srv.URL, token))
	assert.False(t, srv.stats(t, topicmsg.TopicNodeHealth).Writer)
	assert.False(t, srv.health.Attached())

	srv.health.Attach()
	ans := doRaw(t, http.MethodPost, srv.URL+protocol.TopicPath("topics", "1.0.0", topicmsg.TopicLease), token, `{"set":{"node":"n1","renewals":1}}`)
	require.Equal(t, http.StatusOK, ans.status, ans.body)
	w, _ = watchUntilSynced(t, srv, token, "")
	assert.True(t, *w.synced.Writer)
	beat := heartbeatTopics(t, srv.URL, token)
	assert.True(t, beat[topicmsg.TopicNodeHealth], "attached")
	assert.True(t, beat[topicmsg.TopicLease], "a client writes it")
	assert.False(t, beat[topicmsg.TopicCapacity], "no client writes it")
	assert.True(t, srv.stats(t, topicmsg.TopicNodeHealth).Writer)
	status := doRaw(t, http.MethodGet, srv.URL+protocol.PathStatus, "", "")
	assert.Contains(t, status.body, `"topic":"NodeHealth"`)
	assert.Contains(t, status.body, `"writer":true`)

	srv.health.Detach()
	assert.False(t, heartbeatTopics(t, srv.URL, token)[topicmsg.TopicNodeHealth])
}

// A synced frame's writer flag is the topic's at the state the stream
// brings its watcher to, not at the moment the frame is written. Here the
// writer attaches while a snapshot taken without it is on its way (the
// stream's first round blocks on a watcher that has not read yet, so its
// synced frame is written after the attach): the frame says the snapshot
// had no writer, so no informer takes a writer-less replica's state for
// the writer's. A watch made after the attach has the writer.
func TestSyncedFrameTellsTheWriterOfItsSnapshot(t *testing.T) {
	const keys, padding = 64, 32 << 10 // 2 MiB: more than the connection's buffers hold
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{topics: []framework.TopicOption{framework.WithWriterDetached()}})
	for n := range keys {
		require.NoError(t, srv.health.Set(health(n, 1, padding)))
	}
	_, token := rawWatchToken(t, srv)
	// The answer's header comes with the stream's first round, so the
	// stream has its snapshot once it is read.
	_, br := rawWatch(t, srv.URL+protocol.WatchPath("topics", "1.0.0", topicmsg.TopicNodeHealth), token)
	srv.health.Attach()
	sets := 0
	var synced resumeFrame
	for synced.Type == "" {
		line, err := br.ReadBytes('\n')
		require.NoError(t, err)
		switch {
		case bytes.HasPrefix(line, []byte(`{"type":"`+protocol.FrameSet+`"`)):
			sets++
		case bytes.HasPrefix(line, []byte(`{"type":"`+protocol.FrameSynced+`"`)):
			require.NoError(t, json.Unmarshal(line, &synced))
		}
	}
	assert.Equal(t, keys, sets, "the snapshot came before the synced frame")
	require.NotNil(t, synced.Writer)
	assert.False(t, *synced.Writer, "the snapshot was taken while the topic had no writer")

	// Resumed from that point after the attach, the stream is the writer's.
	w, _ := watchUntilSynced(t, srv, token, fmt.Sprintf("%s.%d", synced.History, synced.Rev))
	assert.True(t, *w.synced.Resumed)
	assert.True(t, *w.synced.Writer, "a stream started after the attach has the writer")
}

// TestInformersFollowTheWriterAcrossReplicas is the replicated control
// plane: three replicas of a server, the topic's writer attached on one
// (the leader), another holding a stale topic of its own, the third none.
// Every informer converges on the writer's data and never syncs from
// another replica. The writer replica is killed and the writer starts on
// another: every informer follows within about a heartbeat of its
// attaching, counted in its client's heartbeats to that replica (not on
// the wall clock, which a loaded machine stretches), and no handler ever
// sees a key deleted, as it would if an informer took a writer-less
// replica's topic for the truth.
func TestInformersFollowTheWriterAcrossReplicas(t *testing.T) {
	const keys, informers = 20, 6
	const heartbeat = 200 * time.Millisecond
	detached := topicServerOpts{topics: []framework.TopicOption{framework.WithWriterDetached()},
		cfg: func(c *framework.ServerConfig) { c.Heartbeat = heartbeat }}
	replicas := []*topicServer{
		startTopicServer(t, "127.0.0.1:0", "1.0.0", detached),
		startTopicServer(t, "127.0.0.1:0", "1.0.0", detached),
		startTopicServer(t, "127.0.0.1:0", "1.0.0", detached),
	}
	leader, next, stale := replicas[0], replicas[1], replicas[2]
	for n := range keys {
		require.NoError(t, leader.health.Set(health(n, 1, 0)))
	}
	leader.health.Attach()
	require.NoError(t, stale.health.Set(&topicmsg.NodeHealth{Node: "stale-1"}))
	urls := []string{replicas[0].URL, replicas[1].URL, replicas[2].URL}

	ctx := timeout(t, 30*time.Second)
	var mu sync.Mutex
	var bad []string // events no handler may see
	infs := make([]*framework.Informer[topicmsg.NodeHealth], informers)
	probes := make([]*followProbe, informers)
	for i := range infs {
		probes[i] = newFollowProbe(t, next.URL)
		cl := topicClient(t, "1.0.0", urls, func(c *framework.ClientConfig) {
			c.Instance = fmt.Sprintf("scheduler-%d", i)
			c.Transport = probes[i]
		})
		flag := func(what string) {
			mu.Lock()
			defer mu.Unlock()
			bad = append(bad, fmt.Sprintf("informer %d: %s", i, what))
		}
		inf, err := framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{
			OnAdd: func(k string, _ *topicmsg.NodeHealth) {
				if strings.HasPrefix(k, "stale") {
					flag("add " + k)
				}
			},
			OnUpdate: func(_ string, _, obj *topicmsg.NodeHealth) {
				if obj.Score == 3 { // the successor's state
					probes[i].followed()
				}
			},
			OnDelete: func(k string, _ *topicmsg.NodeHealth) { flag("delete " + k) },
		})
		require.NoError(t, err)
		t.Cleanup(inf.Stop)
		infs[i] = inf
	}
	for i, inf := range infs {
		require.NoError(t, inf.WaitForSync(ctx))
		assert.Equal(t, leader.Server.Instance(), inf.Server(), "informer %d synced from a writer-less replica", i)
		assert.Equal(t, keys, inf.Len(), "informer %d", i)
		requireCacheMatches(t, fmt.Sprintf("informer %d", i), inf, leader.health.TopicView, 5*time.Second)
	}
	require.NoError(t, leader.health.Set(health(0, 2, 0)))
	for i, inf := range infs {
		requireCacheMatches(t, fmt.Sprintf("informer %d", i), inf, leader.health.TopicView, 5*time.Second)
	}

	// Failover: the leader dies; its successor writes its state, then
	// attaches.
	require.NoError(t, leader.Kill())
	for n := range keys {
		require.NoError(t, next.health.Set(health(n, 3, 0)))
	}
	for _, p := range probes {
		p.armed.Store(true)
	}
	attached := time.Now()
	next.health.Attach()
	for i, inf := range infs {
		requireCacheMatches(t, fmt.Sprintf("informer %d", i), inf, next.health.TopicView, 10*time.Second)
		assert.Equal(t, next.Server.Instance(), inf.Server())
	}
	// An informer calls its handlers after its cache changes (a snapshot
	// replaces the cache at once, then reports each key): each probe's
	// first handler call is waited for, not read as soon as the cache
	// matches.
	var beats []int64
	for i, p := range probes {
		if !assert.Eventually(t, func() bool { return p.beatsAtFollow.Load() >= 0 }, 10*time.Second, time.Millisecond,
			"informer %d's handlers were never called with the successor's state", i) {
			mu.Lock()
			seen := slices.Clone(bad)
			mu.Unlock()
			t.Fatalf("events no handler may see: %q", seen)
		}
		beats = append(beats, p.beatsAtFollow.Load())
	}
	t.Logf("every informer followed the writer %v after it attached (heartbeat %v), after %v heartbeat answers saying so",
		time.Since(attached), heartbeat, beats)
	// A client learns of the writer from a heartbeat answer, and its
	// informer then watches the replica: the watch that brought the
	// successor's state went out after the first answer that said the
	// writer is attached, or a second, should the informer's goroutine
	// wait that long for a core (or none, when a watch already on its way
	// reached the replica just after the writer attached). An informer
	// that followed only once its stream fell silent (two TTLs) would have
	// waited for several more.
	for i, n := range beats {
		assert.True(t, n >= 0 && n <= 2,
			"informer %d followed the writer after %d heartbeat answers saying it attached (-1: never)", i, n)
	}

	// The writer moves back to a running replica: a graceful handover.
	for n := range keys {
		require.NoError(t, stale.health.Set(health(n, 4, 0)))
	}
	require.NoError(t, stale.health.Delete("stale-1"))
	stale.health.Attach()
	next.health.Detach()
	for i, inf := range infs {
		requireCacheMatches(t, fmt.Sprintf("informer %d", i), inf, stale.health.TopicView, 10*time.Second)
	}
	mu.Lock()
	assert.Empty(t, bad, "no handler saw a writer-less replica's topic")
	mu.Unlock()
}

// followProbe is a client's transport that, once armed, counts the
// heartbeat answers from one replica that say its topic's writer is
// attached, notes how many had come when the client last asked that
// replica for a watch, and keeps that count as the informer's first
// handler call with the replica's data.
type followProbe struct {
	*http.Transport
	host          string
	watch         string // the watch path of the topic followed
	armed         atomic.Bool
	announced     atomic.Int64 // heartbeat answers saying the writer is attached
	atWatch       atomic.Int64 // announced when the last watch went out
	beatsAtFollow atomic.Int64 // atWatch at the first handler call; -1 until then
}

func newFollowProbe(t testing.TB, replica string) *followProbe {
	u, err := url.Parse(replica)
	require.NoError(t, err)
	p := &followProbe{Transport: framework.NewTransport(nil), host: u.Host,
		watch: protocol.WatchPath("topics", "1.0.0", topicmsg.TopicNodeHealth)}
	p.beatsAtFollow.Store(-1)
	t.Cleanup(p.CloseIdleConnections)
	return p
}

func (p *followProbe) RoundTrip(r *http.Request) (*http.Response, error) {
	if !p.armed.Load() || r.URL.Host != p.host {
		return p.Transport.RoundTrip(r)
	}
	if r.URL.Path == p.watch {
		p.atWatch.Store(p.announced.Load())
	}
	resp, err := p.Transport.RoundTrip(r)
	if err != nil || r.URL.Path != protocol.PathHeartbeat || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var ans struct {
		Topics []struct {
			Topic  string `json:"topic"`
			Writer bool   `json:"writer"`
		} `json:"topics"`
	}
	if json.Unmarshal(body, &ans) == nil {
		for _, tp := range ans.Topics {
			if tp.Topic == topicmsg.TopicNodeHealth && tp.Writer {
				p.announced.Add(1)
			}
		}
	}
	return resp, nil
}

// followed notes how many announcements the watch that brought the
// replica's data waited for, the first time it is called once armed.
func (p *followProbe) followed() {
	if p.armed.Load() {
		p.beatsAtFollow.CompareAndSwap(-1, p.atWatch.Load())
	}
}
