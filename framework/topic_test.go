package framework_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

func TestClientTopicPublishedAndWatched(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	writer := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Instance = "kubelet-a" })
	pub, err := framework.NewTopicPublisher[topicmsg.Lease](writer, topicmsg.TopicLease)
	require.NoError(t, err)
	defer pub.Close()
	ctx := timeout(t, 10*time.Second)
	for i := range 5 {
		require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: int64(i)}))
	}
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-b", Renewals: 1}))
	require.NoError(t, pub.Delete(ctx, "node-b"))

	lease, ok := srv.leases.Get("node-a")
	require.True(t, ok)
	assert.Equal(t, int64(4), lease.Renewals)
	v, _ := srv.leases.Version("node-a")
	assert.Equal(t, framework.ObjectVersion{Epoch: pub.Epoch(), Seq: 5}, v, "the publisher's epoch and sequence travel with the object")
	assert.Equal(t, []string{"node-a"}, srv.leases.Keys())

	watcher := topicClient(t, "1.0.0", []string{srv.URL})
	inf, err := framework.Watch(ctx, watcher, topicmsg.TopicLease, framework.InformerHandlers[topicmsg.Lease]{})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))
	requireCacheMatches(t, "informer", inf, srv.leases, 5*time.Second)
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 9}))
	requireCacheMatches(t, "informer", inf, srv.leases, 5*time.Second)
}

func TestSecondWriterOfAKeyGetsConflict(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	ctx := timeout(t, 10*time.Second)
	a, err := framework.NewTopicPublisher[topicmsg.Lease](topicClient(t, "1.0.0", []string{srv.URL}), topicmsg.TopicLease)
	require.NoError(t, err)
	defer a.Close()
	b, err := framework.NewTopicPublisher[topicmsg.Lease](topicClient(t, "1.0.0", []string{srv.URL}), topicmsg.TopicLease)
	require.NoError(t, err)
	defer b.Close()

	require.NoError(t, a.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 1}))
	err = b.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 100})
	require.Error(t, err)
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(err))
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(b.Delete(ctx, "node-a")), "another writer's key cannot be deleted either")
	lease, _ := srv.leases.Get("node-a")
	assert.Equal(t, int64(1), lease.Renewals, "the refused write changed nothing")
	require.NoError(t, b.Set(ctx, &topicmsg.Lease{Node: "node-b", Renewals: 1}), "a key of its own is fine")
	require.NoError(t, a.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 2}), "the owner keeps writing")
}

func TestRehandshakingWriterKeepsItsKeys(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	ctx := timeout(t, 10*time.Second)
	cl := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Instance = "kubelet-a" })
	pub, err := framework.NewTopicPublisher[topicmsg.Lease](cl, topicmsg.TopicLease)
	require.NoError(t, err)
	defer pub.Close()
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 1}))
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-b", Renewals: 1}))
	before, _ := srv.leases.Version("node-b")

	// The same instance handshakes again (as after a network blip): its
	// old session is replaced, not lost, so its keys stay.
	rawHandshake(t, srv.URL, topicContract(t, "1.0.0"), "kubelet-a")
	assert.Equal(t, []string{"node-a", "node-b"}, srv.leases.Keys())

	// The client finds its session gone, handshakes again, and goes on
	// writing its keys with no conflict and in the same epoch.
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 2}))
	lease, _ := srv.leases.Get("node-a")
	assert.Equal(t, int64(2), lease.Renewals)
	after, _ := srv.leases.Version("node-b")
	assert.Equal(t, before, after, "republishing an unchanged key changed nothing")
	assert.Equal(t, []string{"node-a", "node-b"}, srv.leases.Keys())
}

func TestLostWriterPolicy(t *testing.T) {
	tests := []struct {
		name  string
		topic string // a client-written topic of the contract
		keep  bool   // whether its policy keeps a lost writer's keys
		lapse bool   // lose the writer by silence (TTL) rather than by closing its session
	}{
		{"delete when the session closes", topicmsg.TopicLease, false, false},
		{"delete when the session lapses", topicmsg.TopicLease, false, true},
		{"keep when the session closes", topicmsg.TopicCapacity, true, false},
		{"keep when the session lapses", topicmsg.TopicCapacity, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{cfg: func(c *framework.ServerConfig) {
				// The TTL is many heartbeats long so that only the lapse the
				// test causes ends the writer's session: a loaded machine that
				// delays a few heartbeats must not lose the writer early.
				c.SessionTTL, c.Heartbeat = 3*time.Second, 100*time.Millisecond
			}})
			ctx := timeout(t, 30*time.Second)
			tr := &partitionable{cutTransport: newCutTransport(t, 0)}
			cl := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Transport = tr })
			set := func(p any) error {
				switch p := p.(type) {
				case *framework.TopicPublisher[topicmsg.Lease]:
					return p.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 1})
				case *framework.TopicPublisher[topicmsg.Capacity]:
					return p.Set(ctx, &topicmsg.Capacity{Node: "node-a", Pods: 110})
				}
				return nil
			}
			var pub any
			var closePub func() error
			if tt.keep {
				p, err := framework.NewTopicPublisher[topicmsg.Capacity](cl, tt.topic)
				require.NoError(t, err)
				pub, closePub = p, p.Close
			} else {
				p, err := framework.NewTopicPublisher[topicmsg.Lease](cl, tt.topic)
				require.NoError(t, err)
				pub, closePub = p, p.Close
			}
			require.NoError(t, set(pub))
			_, token := rawWatchToken(t, srv)
			heartbeatUntilEnd(t, srv.URL, token, 100*time.Millisecond)
			_, frames := rawWatch(t, srv.URL+protocol.WatchPath("topics", "1.0.0", tt.topic), token)
			require.Equal(t, "set", readFrame(t, frames).Type)
			require.Equal(t, "synced", readFrame(t, frames).Type)

			require.NoError(t, closePub())
			if tt.lapse {
				tr.blocked.Store(true) // no more heartbeats: the session lapses on the server
				tr.cut()
			} else {
				require.NoError(t, cl.Close())
			}
			require.Eventually(t, func() bool { return srv.stats(t, tt.topic).Writers == 0 }, 20*time.Second, 10*time.Millisecond,
				"the writer's loss was never noticed")
			if tt.keep {
				assert.Equal(t, []string{"node-a"}, srv.capacity.Keys(), "the lost writer's key was not kept")
				// Nobody owns the kept key now: another writer may take it over.
				other, err := framework.NewTopicPublisher[topicmsg.Capacity](topicClient(t, "1.0.0", []string{srv.URL}), tt.topic)
				require.NoError(t, err)
				defer other.Close()
				require.NoError(t, other.Set(ctx, &topicmsg.Capacity{Node: "node-a", Pods: 5}))
				f := readFrame(t, frames)
				assert.Equal(t, "set", f.Type, "watchers see the new writer's object")
				assert.Equal(t, other.Epoch(), f.Epoch)
				return
			}
			assert.Empty(t, srv.leases.Keys(), "the lost writer's key was not deleted")
			f := readFrame(t, frames)
			assert.Equal(t, "delete", f.Type)
			assert.Equal(t, "node-a", f.Key)
			assert.True(t, f.WriterLost, "the delete says its writer was lost")
		})
	}
}

// rawWatchToken opens a session of a watcher instance of its own.
func rawWatchToken(t testing.TB, srv *topicServer) (string, string) {
	t.Helper()
	instance := "watcher-" + t.Name()
	return instance, rawHandshake(t, srv.URL, topicContract(t, "1.0.0"), instance)
}

// partitionable is a client transport that a test can cut off from the
// network: every request fails while blocked.
type partitionable struct {
	*cutTransport
	blocked atomic.Bool
}

func (p *partitionable) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.blocked.Load() {
		return nil, errors.New("partitioned")
	}
	return p.cutTransport.RoundTrip(r)
}

func TestPublisherRepublishesToARestartedServer(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	ctx := timeout(t, 10*time.Second)
	cl := topicClient(t, "1.0.0", []string{srv.URL})
	pub, err := framework.NewTopicPublisher[topicmsg.Lease](cl, topicmsg.TopicLease)
	require.NoError(t, err)
	defer pub.Close()
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: node, Renewals: 3}))
	}
	require.NoError(t, pub.Delete(ctx, "node-c"))

	require.NoError(t, srv.Kill())
	next := startTopicServer(t, srv.Addr, "1.0.0", topicServerOpts{})
	require.Eventually(t, func() bool { return len(next.leases.Keys()) == 2 }, 5*time.Second, 10*time.Millisecond,
		"the publisher did not republish its keys to the restarted server")
	assert.Equal(t, []string{"node-a", "node-b"}, next.leases.Keys())
	v, _ := next.leases.Version("node-b")
	assert.Equal(t, pub.Epoch(), v.Epoch)
}

func TestPublisherRestartRetiresTheEarlierEpoch(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	ctx := timeout(t, 10*time.Second)
	cl := topicClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Instance = "kubelet-a" })
	first, err := framework.NewTopicPublisher[topicmsg.Lease](cl, topicmsg.TopicLease)
	require.NoError(t, err)
	require.NoError(t, first.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 1}))
	require.NoError(t, first.Set(ctx, &topicmsg.Lease{Node: "node-b", Renewals: 1}))
	require.NoError(t, first.Close())

	// The writer restarts with the same instance name and writes only
	// node-a: node-b, left by the earlier epoch, follows the policy.
	second, err := framework.NewTopicPublisher[topicmsg.Lease](cl, topicmsg.TopicLease)
	require.NoError(t, err)
	defer second.Close()
	require.NoError(t, second.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 2}))
	assert.Equal(t, []string{"node-a"}, srv.leases.Keys())
	v, _ := srv.leases.Version("node-a")
	assert.Equal(t, framework.ObjectVersion{Epoch: second.Epoch(), Seq: 1}, v)
}

// A topic's keys are bounded, for the server's writer and for its
// clients' (one client may hold them all here: a writer's share is
// TestOneWriterCannotFillAClientTopic's).
func TestTopicKeyLimit(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{topics: []framework.TopicOption{
		framework.WithMaxKeys(3), framework.WithMaxKeysPerWriter(3)}})
	for n := range 3 {
		require.NoError(t, srv.health.Set(health(n, 1, 0)))
	}
	err := srv.health.Set(health(3, 1, 0))
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err))
	require.NoError(t, srv.health.Set(health(2, 2, 0)), "existing keys are still written")

	ctx := timeout(t, 10*time.Second)
	pub, err := framework.NewTopicPublisher[topicmsg.Lease](topicClient(t, "1.0.0", []string{srv.URL}), topicmsg.TopicLease)
	require.NoError(t, err)
	defer pub.Close()
	for _, node := range []string{"a", "b", "c"} {
		require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: node}))
	}
	err = pub.Set(ctx, &topicmsg.Lease{Node: "d"})
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err))
}

func TestTopicBadInputGetsCodedErrors(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	token := rawHandshake(t, srv.URL, topicContract(t, "1.0.0"), "kubelet-raw")
	lease := protocol.TopicPath("topics", "1.0.0", topicmsg.TopicLease)
	watch := protocol.WatchPath("topics", "1.0.0", topicmsg.TopicLease)
	tests := []struct {
		name   string
		method string // HTTP method
		path   string // request path
		token  string // session header, "" for none
		body   string // request body
		code   framework.Code
	}{
		{"write without a session", http.MethodPost, lease, "", `{"set":{"node":"a","renewals":1}}`, framework.CodeHandshakeRequired},
		{"write with an unknown session", http.MethodPost, lease, "nope", `{"set":{"node":"a","renewals":1}}`, framework.CodeHandshakeRequired},
		{"write at another version", http.MethodPost, protocol.TopicPath("topics", "9.0.0", topicmsg.TopicLease), token, `{"set":{"node":"a","renewals":1}}`, framework.CodeIncompatiblePeer},
		{"write to an unknown contract", http.MethodPost, protocol.TopicPath("nope", "1.0.0", topicmsg.TopicLease), token, `{}`, framework.CodeNotFound},
		{"write to an unknown topic", http.MethodPost, protocol.TopicPath("topics", "1.0.0", "Nope"), token, `{"set":{"node":"a"}}`, framework.CodeNotFound},
		{"write to a server-written topic", http.MethodPost, protocol.TopicPath("topics", "1.0.0", topicmsg.TopicNodeHealth), token, `{"set":{"node":"a","ready":true}}`, framework.CodePermissionDenied},
		{"object failing its schema", http.MethodPost, lease, token, `{"set":{"node":"a","renewals":-1}}`, framework.CodeInvalidArgument},
		{"object with an unknown field", http.MethodPost, lease, token, `{"set":{"node":"a","renewals":1,"x":1}}`, framework.CodeInvalidArgument},
		{"object without its key field", http.MethodPost, lease, token, `{"set":{"renewals":1}}`, framework.CodeInvalidArgument},
		{"object whose key is not a string", http.MethodPost, lease, token, `{"set":{"node":7,"renewals":1}}`, framework.CodeInvalidArgument},
		{"object that is not an object", http.MethodPost, lease, token, `{"set":[1,2]}`, framework.CodeInvalidArgument},
		{"both set and delete", http.MethodPost, lease, token, `{"set":{"node":"a","renewals":1},"delete":"a"}`, framework.CodeInvalidArgument},
		{"neither set nor delete", http.MethodPost, lease, token, `{"epoch":"e1"}`, framework.CodeInvalidArgument},
		{"an empty key to delete", http.MethodPost, lease, token, `{"delete":""}`, framework.CodeInvalidArgument},
		{"an epoch with a quote", http.MethodPost, lease, token, `{"epoch":"a\"b","delete":"a"}`, framework.CodeInvalidArgument},
		{"an unknown field", http.MethodPost, lease, token, `{"put":{}}`, framework.CodeInvalidArgument},
		{"a body that is not JSON", http.MethodPost, lease, token, `{`, framework.CodeInvalidArgument},
		{"watch without a session", http.MethodGet, watch, "", ``, framework.CodeHandshakeRequired},
		{"watch at another version", http.MethodGet, protocol.WatchPath("topics", "2.0.0", topicmsg.TopicLease), token, ``, framework.CodeIncompatiblePeer},
		{"watch an unknown topic", http.MethodGet, protocol.WatchPath("topics", "1.0.0", "Nope"), token, ``, framework.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := doRaw(t, tt.method, srv.URL+tt.path, tt.token, tt.body)
			assert.Equal(t, string(tt.code), a.code, "answer: %s", a.body)
			assert.Equal(t, tt.code.HTTPStatus(), a.status)
		})
	}
	assert.Empty(t, srv.leases.Keys(), "no bad write stored anything")

	// The server keeps serving: a good write by hand goes through.
	a := doRaw(t, http.MethodPost, srv.URL+lease, token, `{"set":{ "node" : "a",
		"renewals": 1 }}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	assert.JSONEq(t, `{"key":"a","epoch":`+quote(t, versionOf(t, srv, "a").Epoch)+`,"seq":1,"applied":true}`, a.body)
	a = doRaw(t, http.MethodPost, srv.URL+lease, token, `{"set":{"node":"a","renewals":1}}`)
	require.Equal(t, http.StatusOK, a.status, a.body)
	var ans struct{ Seq uint64 }
	require.NoError(t, json.Unmarshal([]byte(a.body), &ans))
	assert.Equal(t, uint64(2), ans.Seq, "without an epoch and sequence the server continues the writer's own")
}

func versionOf(t testing.TB, srv *topicServer, key string) framework.ObjectVersion {
	t.Helper()
	v, ok := srv.leases.Version(key)
	require.True(t, ok)
	return v
}

func quote(t testing.TB, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

func TestWatchFramesOnTheWire(t *testing.T) {
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	require.NoError(t, srv.health.Set(&topicmsg.NodeHealth{Node: "n1", Ready: true}))
	token := rawHandshake(t, srv.URL, topicContract(t, "1.0.0"), "watcher")
	resp, br := rawWatch(t, srv.URL+protocol.WatchPath("topics", "1.0.0", topicmsg.TopicNodeHealth), token)
	assert.Equal(t, protocol.ContentTypeNDJSON, resp.Header.Get("Content-Type"))

	line, err := br.ReadString('\n')
	require.NoError(t, err)
	epoch := srv.health.Epoch()
	assert.Equal(t, `{"type":"set","key":"n1","epoch":"`+epoch+`","seq":1,"rev":1,"object":{"node":"n1","ready":true}}`+"\n", line)
	line, _ = br.ReadString('\n')
	var synced struct{ History string }
	require.NoError(t, json.Unmarshal([]byte(line), &synced))
	assert.Len(t, synced.History, 16)
	assert.Equal(t, `{"type":"synced","instance":`+quote(t, srv.Server.Instance())+`,"history":"`+synced.History+`","rev":1,"resumed":false,"writer":true}`+"\n", line)
	require.NoError(t, srv.health.Delete("n1"))
	line, _ = br.ReadString('\n')
	assert.Equal(t, `{"type":"delete","key":"n1","epoch":"`+epoch+`","seq":2,"rev":2}`+"\n", line)

	// Draining ends the stream with a closing frame, then the connection.
	go func() { _ = srv.Stop() }()
	line, _ = br.ReadString('\n')
	assert.Equal(t, `{"type":"closing","reason":"draining"}`+"\n", line)
	rest, err := io.ReadAll(br)
	assert.NoError(t, err, "the stream ends cleanly")
	assert.Empty(t, rest)
}

func TestWatchOverHTTP2(t *testing.T) {
	tlsMaterial := frameworktest.NewTLS(t, "kubelet")
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{cfg: func(c *framework.ServerConfig) {
		c.TLSConfig = tlsMaterial.Server
	}})
	require.NoError(t, srv.health.Set(&topicmsg.NodeHealth{Node: "n1", Ready: true}))
	tr := &http.Transport{TLSClientConfig: tlsMaterial.Client, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	c := topicContract(t, "1.0.0")
	hello := `{"contract":"topics","component":"kubelet","instance":"h2","release":"1.31.0","offers":[{"version":"1.0.0","fingerprint":"` + c.Fingerprint() + `"}]}`
	resp, err := hc.Post(srv.URL+protocol.PathHandshake, "application/json", bytes.NewReader([]byte(hello)))
	require.NoError(t, err)
	var w struct{ Session string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&w))
	resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor, "the test needs HTTP/2")

	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+protocol.WatchPath("topics", "1.0.0", topicmsg.TopicNodeHealth), nil)
	req.Header.Set(protocol.HeaderSession, w.Session)
	resp, err = hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	dec := json.NewDecoder(resp.Body)
	var f frame
	require.NoError(t, dec.Decode(&f))
	assert.Equal(t, "set", f.Type)
	require.NoError(t, dec.Decode(&f))
	assert.Equal(t, "synced", f.Type)
	require.NoError(t, srv.health.Set(&topicmsg.NodeHealth{Node: "n2"}))
	require.NoError(t, dec.Decode(&f))
	assert.Equal(t, "n2", f.Key)

	go func() { _ = srv.Stop() }()
	require.NoError(t, dec.Decode(&f))
	assert.Equal(t, "closing", f.Type)
}

// TestPublisherWritesEveryReplica shows a client-written topic on a
// replicated server: the publisher writes every compatible replica, so
// each holds the writer's keys, and a replica that restarts gets them
// again.
func TestPublisherWritesEveryReplica(t *testing.T) {
	a := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	b := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	cl := topicClient(t, "1.0.0", []string{a.URL, b.URL})
	ctx := timeout(t, 10*time.Second)
	require.Eventually(t, func() bool {
		for _, e := range cl.Endpoints() {
			if e.State != "ready" {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond)
	pub, err := framework.NewTopicPublisher[topicmsg.Lease](cl, topicmsg.TopicLease)
	require.NoError(t, err)
	defer pub.Close()
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 1}))
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-b", Renewals: 1}))
	for _, srv := range []*topicServer{a, b} {
		// Set returns once one replica holds the object; the other gets it
		// as soon as the client routes to it.
		require.Eventually(t, func() bool { return len(srv.leases.Keys()) == 2 }, 5*time.Second, 5*time.Millisecond)
		v, _ := srv.leases.Version("node-b")
		assert.Equal(t, framework.ObjectVersion{Epoch: pub.Epoch(), Seq: 2}, v, "every replica holds the same version")
	}

	require.NoError(t, a.Kill())
	require.NoError(t, pub.Set(ctx, &topicmsg.Lease{Node: "node-a", Renewals: 2}), "one replica down: the other takes the write")
	next := startTopicServer(t, a.Addr, "1.0.0", topicServerOpts{})
	require.Eventually(t, func() bool {
		v, ok := next.leases.Version("node-a")
		return ok && v.Seq == 3 && len(next.leases.Keys()) == 2
	}, 5*time.Second, 5*time.Millisecond, "the restarted replica did not get the writer's current state")
}
