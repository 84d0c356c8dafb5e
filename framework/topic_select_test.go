package framework_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// assignServer is a nodecontroller holding the Assignment topic (selectors
// node and phase) and NodeHealth (no selectors) at version.
type assignServer struct {
	*frameworktest.Running
	pods   *framework.TopicWriter[topicmsg.Assignment]
	health *framework.TopicWriter[topicmsg.NodeHealth]
}

func startAssignServer(t testing.TB, version string) *assignServer {
	return startAssignServerTTL(t, version, 2*time.Second)
}

// startAssignServerTTL is startAssignServer with a session TTL: a stalled
// watcher's stream lives about two TTLs.
func startAssignServerTTL(t testing.TB, version string, ttl time.Duration) *assignServer {
	t.Helper()
	c := topicContract(t, version)
	as := &assignServer{}
	as.Running = frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: ttl, Heartbeat: ttl / 10}, func(s *framework.Server) {
		as.pods = framework.ServeTopic[topicmsg.Assignment](s, c, topicmsg.TopicAssignment)
		as.health = framework.ServeTopic[topicmsg.NodeHealth](s, c, topicmsg.TopicNodeHealth)
		framework.ServeOtherTopics(s, c)
	})
	return as
}

func pod(uid, node string, gen int64) *topicmsg.Assignment {
	return &topicmsg.Assignment{UID: uid, Node: node, Phase: "Pending", Gen: gen}
}

// eventLog records an informer's handler calls, as "add p1", "update p1",
// "delete p1", and wakes waiters on each.
type eventLog struct {
	mu     sync.Mutex
	events []string
	objs   map[string]*topicmsg.Assignment
}

func (l *eventLog) handlers() framework.InformerHandlers[topicmsg.Assignment] {
	rec := func(kind, key string, obj *topicmsg.Assignment) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, kind+" "+key)
		if l.objs == nil {
			l.objs = map[string]*topicmsg.Assignment{}
		}
		l.objs[key] = obj
	}
	return framework.InformerHandlers[topicmsg.Assignment]{
		OnAdd:    func(k string, o *topicmsg.Assignment) { rec("add", k, o) },
		OnUpdate: func(k string, _, o *topicmsg.Assignment) { rec("update", k, o) },
		OnDelete: func(k string, o *topicmsg.Assignment) { rec("delete", k, o) },
	}
}

// take returns the events recorded since the last take.
func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

func (l *eventLog) has(event string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.events, event)
}

// TestSelectedWatchSeesExactlyItsShare: three informers of one topic, two
// selecting a node and one selecting nothing, through creates, updates, a
// rebind from one node to the other, deletes and a new pod. Each sees its
// share and nothing else: a rebind is a delete on the old node and an add
// on the new one. Each phase ends with a marker pod on every node, so that
// the events a watcher must not see would have arrived before it.
func TestSelectedWatchSeesExactlyItsShare(t *testing.T) {
	as := startAssignServer(t, "1.0.0")
	for i := 0; i < 4; i++ {
		require.NoError(t, as.pods.Set(pod(fmt.Sprintf("a%d", i), "node-a", 0)))
		require.NoError(t, as.pods.Set(pod(fmt.Sprintf("b%d", i), "node-b", 0)))
	}
	require.NoError(t, as.pods.Set(pod("unbound", "", 0)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := topicClient(t, "1.0.0", []string{as.URL})
	logs := map[string]*eventLog{"node-a": {}, "node-b": {}, "": {}}
	infs := map[string]*framework.Informer[topicmsg.Assignment]{}
	for node, l := range logs {
		var opts []framework.WatchOption
		if node != "" {
			opts = append(opts, framework.Select("node", node))
		}
		inf, err := framework.Watch(ctx, c, topicmsg.TopicAssignment, l.handlers(), opts...)
		require.NoError(t, err)
		t.Cleanup(inf.Stop)
		infs[node] = inf
	}
	for _, inf := range infs {
		require.NoError(t, inf.WaitForSync(ctx))
	}
	// Snapshots: each kubelet's holds only its node's pods.
	assert.Equal(t, []string{"a0", "a1", "a2", "a3"}, infs["node-a"].Keys())
	assert.Equal(t, []string{"b0", "b1", "b2", "b3"}, infs["node-b"].Keys())
	assert.Equal(t, []string{"a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3", "unbound"}, infs[""].Keys())
	for node, l := range logs {
		got := l.take()
		sort.Strings(got)
		want := map[string][]string{
			"node-a": {"add a0", "add a1", "add a2", "add a3"},
			"node-b": {"add b0", "add b1", "add b2", "add b3"},
			"":       {"add a0", "add a1", "add a2", "add a3", "add b0", "add b1", "add b2", "add b3", "add unbound"},
		}[node]
		assert.Equal(t, want, got, "snapshot of %q", node)
	}

	marker := 0
	endPhase := func() {
		t.Helper()
		marker++
		for _, node := range []string{"node-a", "node-b"} {
			require.NoError(t, as.pods.Set(pod(fmt.Sprintf("marker-%s-%d", node, marker), node, 0)))
		}
		for node, l := range logs {
			for _, n := range []string{"node-a", "node-b"} {
				if node != "" && node != n {
					continue
				}
				ev := fmt.Sprintf("add marker-%s-%d", n, marker)
				require.Eventually(t, func() bool { return l.has(ev) }, 10*time.Second, 5*time.Millisecond, "%q waits for %s", node, ev)
			}
		}
	}
	takeChanges := func(l *eventLog) []string {
		var out []string
		for _, e := range l.take() {
			if !strings.Contains(e, "marker-") {
				out = append(out, e)
			}
		}
		return out
	}

	// An update, a rebind a1 → node-b, a delete on node-b, a pod bound
	// from nowhere to node-a, and one unbound from node-b.
	require.NoError(t, as.pods.Set(pod("a0", "node-a", 1)))
	require.NoError(t, as.pods.Set(pod("a1", "node-b", 1)))
	require.NoError(t, as.pods.Delete("b0"))
	require.NoError(t, as.pods.Set(pod("unbound", "node-a", 1)))
	require.NoError(t, as.pods.Set(pod("b3", "", 1)))
	endPhase()
	assert.Equal(t, []string{"update a0", "delete a1", "add unbound"}, takeChanges(logs["node-a"]))
	assert.Equal(t, []string{"add a1", "delete b0", "delete b3"}, takeChanges(logs["node-b"]))
	assert.Equal(t, []string{"update a0", "update a1", "delete b0", "update unbound", "update b3"}, takeChanges(logs[""]))

	// The rebound pod lives on node-b now: its changes reach node-b only,
	// and its delete too.
	require.NoError(t, as.pods.Set(pod("a1", "node-b", 2)))
	require.NoError(t, as.pods.Delete("a1"))
	require.NoError(t, as.pods.Delete("a2"))
	endPhase()
	assert.Equal(t, []string{"delete a2"}, takeChanges(logs["node-a"]))
	got := takeChanges(logs["node-b"])
	// The update and the delete of a1 may be coalesced into the delete.
	assert.Contains(t, [][]string{{"update a1", "delete a1"}, {"delete a1"}}, got)

	assert.Equal(t, []string{"a0", "a3", "marker-node-a-1", "marker-node-a-2", "unbound"}, infs["node-a"].Keys())
	assert.Equal(t, []string{"b1", "b2", "marker-node-b-1", "marker-node-b-2"}, infs["node-b"].Keys())
	for _, key := range infs["node-a"].Keys() {
		obj, _ := infs["node-a"].Get(key)
		assert.Equal(t, "node-a", obj.Node)
	}
}

// TestSelectionRefusedWithItsCode: a selector the topic does not declare,
// a value for a topic without selectors, and a selector named twice are
// invalid_argument, on the wire and from Watch and ForTopic; the server
// keeps serving.
func TestSelectionRefusedWithItsCode(t *testing.T) {
	as := startAssignServer(t, "1.0.0")
	c := topicContract(t, "1.0.0")
	token := rawHandshake(t, as.URL, c, "raw-kubelet")
	base := as.URL + protocol.WatchPath(c.Name(), c.Version(), topicmsg.TopicAssignment)
	for _, q := range []string{"?nodeName=node-a", "?node=a&node=b", "?node=a&bogus=1"} {
		a := doRaw(t, http.MethodGet, base+q, token, "")
		assert.Equal(t, http.StatusBadRequest, a.status, "%s: %s", q, a.body)
		assert.Equal(t, string(framework.CodeInvalidArgument), a.code, q)
	}
	a := doRaw(t, http.MethodGet, as.URL+protocol.WatchPath(c.Name(), c.Version(), topicmsg.TopicNodeHealth)+"?node=node-a", token, "")
	assert.Equal(t, http.StatusBadRequest, a.status, a.body)
	assert.Equal(t, string(framework.CodeInvalidArgument), a.code)
	assert.Contains(t, a.body, "declares no selectors")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := topicClient(t, "1.0.0", []string{as.URL})
	_, err := framework.Watch(ctx, cl, topicmsg.TopicAssignment, framework.InformerHandlers[topicmsg.Assignment]{}, framework.Select("nodeName", "x"))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "%v", err)
	_, err = framework.Watch(ctx, cl, topicmsg.TopicAssignment, framework.InformerHandlers[topicmsg.Assignment]{},
		framework.Select("node", "x"), framework.Select("node", "y"))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "%v", err)
	_, err = framework.Watch(ctx, cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{}, framework.Select("node", "x"))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "%v", err)
	f := framework.NewInformerFactory(cl, 0)
	_, err = framework.ForTopic[topicmsg.Assignment](f, topicmsg.TopicAssignment, framework.Select("bogus", "x"))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "%v", err)

	// Still serving: a valid selection streams.
	resp, br := rawWatch(t, base+"?node=node-a", token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "synced", readFrame(t, br).Type)
}

// readUntilSynced reads frames up to synced, returning them as "set k" or
// "delete k", and synced.
func readUntilSynced(t testing.TB, br *bufio.Reader) ([]string, resumeFrame) {
	t.Helper()
	var got []string
	for {
		f := readResumeFrame(t, br)
		if f.Type == "synced" {
			return got, f
		}
		got = append(got, f.Type+" "+f.Key)
	}
}

// TestSelectedResumeAndSnapshotAreFiltered: over the wire, a selecting
// watcher's snapshot holds only its share; resumed, it is sent only what
// changed in its share since, with a pod rebound away from it, and one
// deleted, as deletes, and nothing of the other node's changes.
func TestSelectedResumeAndSnapshotAreFiltered(t *testing.T) {
	as := startAssignServer(t, "1.0.0")
	for i := 0; i < 8; i++ {
		require.NoError(t, as.pods.Set(pod(fmt.Sprintf("a%d", i), "node-a", 0)))
		require.NoError(t, as.pods.Set(pod(fmt.Sprintf("b%d", i), "node-b", 0)))
	}
	c := topicContract(t, "1.0.0")
	token := rawHandshake(t, as.URL, c, "raw-kubelet")
	heartbeatUntilEnd(t, as.URL, token, 200*time.Millisecond)
	base := as.URL + protocol.WatchPath(c.Name(), c.Version(), topicmsg.TopicAssignment)

	resp, br := rawWatch(t, base+"?node=node-a", token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	snap, synced := readUntilSynced(t, br)
	sort.Strings(snap)
	assert.Equal(t, []string{"set a0", "set a1", "set a2", "set a3", "set a4", "set a5", "set a6", "set a7"}, snap)
	assert.False(t, *synced.Resumed)
	require.NoError(t, resp.Body.Close())

	require.NoError(t, as.pods.Set(pod("a0", "node-a", 1)))  // updated in the share
	require.NoError(t, as.pods.Set(pod("a1", "node-b", 1)))  // rebound away
	require.NoError(t, as.pods.Delete("a2"))                 // deleted
	require.NoError(t, as.pods.Set(pod("b0", "node-b", 1)))  // the other node's
	require.NoError(t, as.pods.Delete("b1"))                 // the other node's
	require.NoError(t, as.pods.Set(pod("b2", "node-a", 1)))  // rebound here
	require.NoError(t, as.pods.Set(pod("a3", "node-b", 1)))  // away and
	require.NoError(t, as.pods.Set(pod("a3", "node-a", 2)))  // back: a set
	require.NoError(t, as.pods.Set(pod("a4", "node-b", 1)))  // away, and
	require.NoError(t, as.pods.Delete("a4"))                 // deleted there: a delete
	require.NoError(t, as.pods.Set(pod("new", "node-b", 1))) // the other node's

	since := synced.point()
	resp, br = rawWatch(t, base+"?node=node-a&since="+since, token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get(protocol.HeaderResumed))
	changes, synced2 := readUntilSynced(t, br)
	assert.True(t, *synced2.Resumed)
	sort.Strings(changes)
	assert.Equal(t, []string{"delete a1", "delete a2", "delete a4", "set a0", "set a3", "set b2"}, changes)

	// The other node's watcher, resumed from the same point, is sent its
	// own share's changes.
	resp, br = rawWatch(t, base+"?node=node-b&since="+since, token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	changes, synced3 := readUntilSynced(t, br)
	assert.True(t, *synced3.Resumed)
	sort.Strings(changes)
	// a3 went through node-b and left it: a delete, as a4's delete there.
	assert.Equal(t, []string{"delete a3", "delete a4", "delete b1", "delete b2", "set a1", "set b0", "set new"}, changes)
}

// TestForkedTopicIsSelectedPerVersion: a topic forked to an earlier
// version keeps its selection there: an old watcher selecting a node sees
// only that node's pods, converted, and a rebind as a delete; the server
// reports each watcher's selection.
func TestForkedTopicIsSelectedPerVersion(t *testing.T) {
	v1, v2 := topicContract(t, "1.0.0"), topicContract(t, "2.0.0")
	var pods *framework.TopicWriter[topicmsg.Assignment]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0"}, func(s *framework.Server) {
		pods = framework.ServeTopic[topicmsg.Assignment](s, v2, topicmsg.TopicAssignment)
		framework.ForkTopic(s, v1, pods, func(a *topicmsg.Assignment) (*topicmsg.Assignment, error) {
			old := *a
			old.Phase = "v1:" + a.Phase
			return &old, nil
		})
		framework.ServeOtherTopics(s, v2)
		framework.ServeOtherTopics(s, v1)
	})
	for i := 0; i < 3; i++ {
		require.NoError(t, pods.Set(pod(fmt.Sprintf("a%d", i), "node-a", 0)))
		require.NoError(t, pods.Set(pod(fmt.Sprintf("b%d", i), "node-b", 0)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := &eventLog{}
	inf, err := framework.Watch(ctx, topicClient(t, "1.0.0", []string{srv.URL}), topicmsg.TopicAssignment, l.handlers(),
		framework.Select("node", "node-a"))
	require.NoError(t, err)
	t.Cleanup(inf.Stop)
	require.NoError(t, inf.WaitForSync(ctx))
	assert.Equal(t, []string{"a0", "a1", "a2"}, inf.Keys())
	obj, _ := inf.Get("a0")
	assert.Equal(t, "v1:Pending", obj.Phase, "the old watcher holds the converted form")
	l.take()

	require.NoError(t, pods.Set(pod("b0", "node-b", 1)))
	require.NoError(t, pods.Set(pod("a1", "node-b", 1)))
	require.NoError(t, pods.Set(pod("b1", "node-a", 1)))
	require.Eventually(t, func() bool { return l.has("add b1") }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{"delete a1", "add b1"}, l.take())
	assert.Equal(t, []string{"a0", "a2", "b1"}, inf.Keys())

	var found bool
	for _, st := range srv.Server.TopicStats() {
		if st.Topic == topicmsg.TopicAssignment && st.Version == "1.0.0" {
			assert.Equal(t, []string{"node", "phase"}, st.Selectors)
			require.Len(t, st.Watchers, 1)
			assert.Equal(t, "node=node-a", st.Watchers[0].Selection)
			found = true
		}
	}
	assert.True(t, found)
}

// TestSharedInformersPerSelection: a factory keeps one shared informer
// per (topic, selection): the same selection is the same informer, another
// is another, each lister holding its own share.
func TestSharedInformersPerSelection(t *testing.T) {
	as := startAssignServer(t, "1.0.0")
	for i := 0; i < 3; i++ {
		require.NoError(t, as.pods.Set(pod(fmt.Sprintf("a%d", i), "node-a", 0)))
		require.NoError(t, as.pods.Set(pod(fmt.Sprintf("b%d", i), "node-b", 0)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := framework.NewInformerFactory(topicClient(t, "1.0.0", []string{as.URL}), 0)
	a, err := framework.ForTopic[topicmsg.Assignment](f, topicmsg.TopicAssignment, framework.Select("node", "node-a"))
	require.NoError(t, err)
	again, err := framework.ForTopic[topicmsg.Assignment](f, topicmsg.TopicAssignment, framework.Select("node", "node-a"))
	require.NoError(t, err)
	assert.Same(t, a, again)
	b, err := framework.ForTopic[topicmsg.Assignment](f, topicmsg.TopicAssignment, framework.Select("node", "node-b"))
	require.NoError(t, err)
	all, err := framework.ForTopic[topicmsg.Assignment](f, topicmsg.TopicAssignment)
	require.NoError(t, err)
	assert.NotSame(t, a, b)
	assert.NotSame(t, a, all)
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	assert.Equal(t, []string{"a0", "a1", "a2"}, a.Lister().Keys())
	assert.Equal(t, []string{"b0", "b1", "b2"}, b.Lister().Keys())
	assert.Len(t, all.Lister().Keys(), 6)
}

// TestStalledSelectingWatcherCoalescesItsShare: a selecting watcher whose
// process stops reading gets, once it reads again, the latest state of its
// share: a pod changed many times meanwhile once (coalesced at the
// server), a pod rebound away as a delete even though it changed again on
// its new node, a pod rebound to it as its latest object; never another
// node's pod.
func TestStalledSelectingWatcherCoalescesItsShare(t *testing.T) {
	// Long enough a TTL that the stalled watcher's session and stream
	// outlive the stall on a loaded machine.
	as := startAssignServerTTL(t, "1.0.0", 20*time.Second)
	padded := func(uid, node string, gen int64) *topicmsg.Assignment {
		p := pod(uid, node, gen)
		p.Padding = strings.Repeat("x", 64<<10)
		return p
	}
	for i := 0; i < 4; i++ {
		require.NoError(t, as.pods.Set(padded(fmt.Sprintf("a%d", i), "node-a", 0)))
		require.NoError(t, as.pods.Set(padded(fmt.Sprintf("b%d", i), "node-b", 0)))
	}
	ct := newCutTransport(t, 128<<10)
	cl := topicClient(t, "1.0.0", []string{as.URL}, func(c *framework.ClientConfig) { c.Transport = ct })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var outside sync.Map
	check := func(_ string, obj *topicmsg.Assignment) {
		if obj.Node != "node-a" {
			outside.Store(obj.UID, obj.Node)
		}
	}
	inf, err := framework.Watch(ctx, cl, topicmsg.TopicAssignment, framework.InformerHandlers[topicmsg.Assignment]{
		OnAdd: check, OnUpdate: func(k string, _, obj *topicmsg.Assignment) { check(k, obj) },
	}, framework.Select("node", "node-a"))
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))

	stats := func() framework.WatcherStats {
		for _, st := range as.Server.TopicStats() {
			if st.Topic == topicmsg.TopicAssignment && len(st.Watchers) == 1 {
				return st.Watchers[0]
			}
		}
		return framework.WatcherStats{}
	}
	ct.stall()
	defer ct.resume() // before inf.Stop, should the test fail while stalled
	// Write a0 until its changes wait at the server: the stalled
	// connection is full and a flush is stuck writing into it.
	// Each poll writes one more change, so once a flush is stuck the next
	// one waits.
	gen := int64(0)
	require.Eventually(t, func() bool {
		gen++
		return as.pods.Set(padded("a0", "node-a", gen)) == nil && stats().Queued > 0
	}, 10*time.Second, 2*time.Millisecond, "the stalled watcher's connection never filled")
	// A change seen queued may still have gone out in a round of its own
	// (the flush was not stuck yet): write a0 on until a change to it
	// replaced one that waited.
	require.Eventually(t, func() bool {
		gen++
		return as.pods.Set(padded("a0", "node-a", gen)) == nil && stats().Coalesced > 0
	}, 10*time.Second, 2*time.Millisecond, "a0's changes were not coalesced")
	for range 5 {
		gen++
		require.NoError(t, as.pods.Set(padded("a0", "node-a", gen)))
	}
	require.NoError(t, as.pods.Set(padded("a1", "node-b", gen)))   // away,
	require.NoError(t, as.pods.Set(padded("a1", "node-b", gen+1))) // and changed there
	require.NoError(t, as.pods.Set(padded("b0", "node-a", gen)))   // here
	require.NoError(t, as.pods.Set(padded("b1", "node-b", gen)))   // the other node's
	ct.resume()

	require.Eventually(t, func() bool {
		obj, ok := inf.Get("a0")
		return ok && obj.Gen == gen && slices.Equal(inf.Keys(), []string{"a0", "a2", "a3", "b0"})
	}, 10*time.Second, 5*time.Millisecond, "the watcher holds %v", inf.Keys())
	outside.Range(func(k, v any) bool {
		t.Errorf("the node-a watcher was handed %v of %v", k, v)
		return true
	})
}

// TestSelectedWatchFramesComeInRevisionOrder: the protocol's promise that
// after synced a stream's frames come in revision order, which is what
// makes the last revision read a resume point, holds for selecting
// watchers while a writer rewrites their keys faster than the fan-out
// hands them on: the fan-out then holds many keys' latest changes at
// once, each at the place its key first changed rather than in the order
// the changes were made, and a stream's flush may send part of them
// before the rest are handed to it.
//
// The session lives 30s without a heartbeat (and a stream whose writes
// stall, twice that), so that a starved process on a loaded machine keeps
// its streams; the order is all the test asserts.
func TestSelectedWatchFramesComeInRevisionOrder(t *testing.T) {
	as := startAssignServerTTL(t, "1.0.0", 30*time.Second)
	const keys, rounds, watchers = 256, 30, 4
	c := topicContract(t, "1.0.0")
	token := rawHandshake(t, as.URL, c, "raw-kubelet")
	heartbeatUntilEnd(t, as.URL, token, 200*time.Millisecond)
	base := as.URL + protocol.WatchPath(c.Name(), c.Version(), topicmsg.TopicAssignment)

	// Each watcher reads until it has every key's last write (gen
	// rounds), counting the frames that came after a later revision.
	type verdict struct {
		frames, inversions int
		first              string
		ended              error // the stream ended before every last write
	}
	verdicts := make(chan verdict, watchers)
	var started sync.WaitGroup
	for range watchers {
		resp, br := rawWatch(t, base+"?node=node-a", token)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, synced := readUntilSynced(t, br)
		started.Add(1)
		go func() {
			started.Done()
			var v verdict
			last := synced.Rev
			finished := map[string]bool{}
			for len(finished) < keys {
				line, err := br.ReadBytes('\n')
				if err != nil {
					v.ended = err
					break
				}
				var f resumeFrame
				var obj topicmsg.Assignment
				if json.Unmarshal(line, &f) != nil || f.Type != "set" || json.Unmarshal(f.Object, &obj) != nil {
					continue // pings
				}
				v.frames++
				if f.Rev <= last {
					v.inversions++
					if v.first == "" {
						v.first = fmt.Sprintf("%s at revision %d after revision %d", f.Key, f.Rev, last)
					}
				}
				last = max(last, f.Rev)
				if obj.Gen == rounds {
					finished[f.Key] = true
				}
			}
			verdicts <- v
		}()
	}
	started.Wait()
	for i := range keys * rounds {
		require.NoError(t, as.pods.Set(pod(fmt.Sprintf("a%d", i%keys), "node-a", int64(i/keys+1))))
	}
	hang := time.After(3 * time.Minute) // a hang bound: a loaded machine takes 40s
	for range watchers {
		select {
		case v := <-verdicts:
			assert.Zero(t, v.inversions, "%d of %d frames came after a later revision; the first: %s", v.inversions, v.frames, v.first)
			assert.NoError(t, v.ended, "the stream ended before every key's last write")
		case <-hang:
			t.Fatal("the watchers did not get every key's last write within 3 minutes")
		}
	}
}
