package framework_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Attacks in which one peer, or a few, fill a bound they share with
// honest peers, against a live server; each test says what it did.

// writeTopic writes obj to a client topic as p in session token and
// returns the answer.
func (p *mtlsPeer) writeTopic(topic, token string, obj any) rawAnswer {
	p.t.Helper()
	body, err := json.Marshal(map[string]any{"set": obj})
	require.NoError(p.t, err)
	return p.do(http.MethodPost, protocol.TopicPath("topics", "1.0.0", topic), token, body)
}

// requireExhausted checks a refusal for a shared bound: 429,
// resource_exhausted, counted under limit.
func requireExhausted(t *testing.T, srv *framework.Server, a rawAnswer, limit string, before float64, what string) {
	t.Helper()
	require.Equal(t, string(framework.CodeResourceExhausted), a.code, "%s: %d %s", what, a.status, a.message)
	assert.Equal(t, http.StatusTooManyRequests, a.status, what)
	assert.Greater(t, refusals(t, srv, limit), before, "%s is counted as %s", what, limit)
}

// One writer of a client topic could fill it: its keys up to WithMaxKeys
// and its objects up to WithMaxBytes, from one session, after which
// every other writer's new key was refused resource_exhausted (and under
// the keep policy the keys stayed after the writer left). A writer
// identity now holds at most its share of a client topic
// (WithMaxKeysPerWriter, WithMaxBytesPerWriter: a quarter of the topic's
// bounds by default), over all its instances, kept keys included, and
// the topic's last quarter is kept for writers holding little, so
// neither one writer nor four at their shares lock the others out.
func TestOneWriterCannotFillAClientTopic(t *testing.T) {
	const (
		maxKeys  = 16      // a writer's share 4, the last 4 kept
		maxBytes = 1 << 20 // a writer's share 256 KiB, the last 256 KiB kept
	)
	topics := topicContract(t, "1.0.0")
	m := startLimitsServer(t, framework.Limits{}, func(s *framework.Server) {
		opts := []framework.TopicOption{framework.WithMaxKeys(maxKeys), framework.WithMaxBytes(maxBytes)}
		framework.ServeClientTopic[topicmsg.Lease](s, topics, topicmsg.TopicLease, opts...)
		framework.ServeClientTopic[topicmsg.Capacity](s, topics, topicmsg.TopicCapacity, opts...)
		framework.ServeOtherTopics(s, topics)
	})
	lease := func(node string, padding int) topicmsg.Lease {
		return topicmsg.Lease{Node: node, Renewals: 1, Padding: strings.Repeat("x", padding)}
	}
	good := m.kubelet(t, "good")
	goodToken := good.session(topics, "good")

	// Keys: one writer writes new keys until it is refused.
	evil := m.kubelet(t, "evil")
	evilToken := evil.session(topics, "evil-0")
	before := refusals(t, m.Server, "topic_keys_per_writer")
	written := 0
	var refused rawAnswer
	for i := range maxKeys + 1 {
		a := evil.writeTopic(topicmsg.TopicLease, evilToken, lease(fmt.Sprint("evil-", i), 0))
		if a.status != http.StatusOK {
			refused = a
			break
		}
		written++
	}
	requireExhausted(t, m.Server, refused, "topic_keys_per_writer", before, "a writer's key beyond its share")
	assert.Equal(t, maxKeys/4, written, "a writer holds a quarter of the topic's keys")
	// Another instance of the same identity shares its share.
	evilToken1 := evil.session(topics, "evil-1")
	requireExhausted(t, m.Server, evil.writeTopic(topicmsg.TopicLease, evilToken1, lease("evil-x", 0)),
		"topic_keys_per_writer", before, "a key of the writer's other instance")
	a := good.writeTopic(topicmsg.TopicLease, goodToken, lease("good", 0))
	require.Equal(t, http.StatusOK, a.status, "another writer keeps room: %s", a.message)

	// Bytes: a writer's large objects stop at its share of the bytes.
	big := m.kubelet(t, "big")
	bigToken := big.session(topics, "big")
	before = refusals(t, m.Server, "topic_bytes_per_writer")
	written, refused = 0, rawAnswer{}
	for i := range maxBytes / (100 << 10) {
		a := big.writeTopic(topicmsg.TopicLease, bigToken, lease(fmt.Sprint("big-", i), 100<<10))
		if a.status != http.StatusOK {
			refused = a
			break
		}
		written++
	}
	requireExhausted(t, m.Server, refused, "topic_bytes_per_writer", before, "a writer's object beyond its share of bytes")
	assert.Equal(t, 2, written, "a writer holds a quarter of the topic's bytes")
	a = good.writeTopic(topicmsg.TopicLease, goodToken, lease("good", 1<<10))
	require.Equal(t, http.StatusOK, a.status, "another writer keeps room: %s", a.message)

	// Four writers at their shares still leave room: the last quarter is
	// kept for writers that hold little.
	// Seven keys are held (evil's 4, good's, big's 2): the next writer
	// takes its share of 4, the two after it reach the kept quarter and
	// take one key each.
	before = refusals(t, m.Server, "topic_keys")
	var taken []int
	for w := 1; w < 4; w++ {
		p := m.kubelet(t, fmt.Sprint("few-", w))
		token := p.session(topics, fmt.Sprint("few-", w))
		n := 0
		for i := range maxKeys {
			if p.writeTopic(topicmsg.TopicLease, token, lease(fmt.Sprintf("few-%d-%d", w, i), 0)).status != http.StatusOK {
				break
			}
			n++
		}
		taken = append(taken, n)
	}
	assert.Equal(t, []int{4, 1, 1}, taken, "keys the next three writers took")
	assert.Equal(t, before+2, refusals(t, m.Server, "topic_keys"), "the refusals at the kept quarter")
	for i := range 3 {
		p := m.kubelet(t, fmt.Sprint("good-", i))
		a := p.writeTopic(topicmsg.TopicLease, p.session(topics, fmt.Sprint("good-", i)), lease(fmt.Sprint("good-", i), 0))
		require.Equal(t, http.StatusOK, a.status, "honest writer %d, after four writers took their shares: %s", i, a.message)
	}

	// A writer whose sessions are lost loses its keys under the delete
	// policy, and with them what they held of its share.
	for _, token := range []string{evilToken, evilToken1} {
		require.Equal(t, http.StatusNoContent, evil.do(http.MethodDelete, protocol.PathSession, token, nil).status)
	}
	evilToken = evil.session(topics, "evil-2")
	a = evil.writeTopic(topicmsg.TopicLease, evilToken, lease("evil-again", 0))
	require.Equal(t, http.StatusOK, a.status, "the writer's share is free once its keys are deleted: %s", a.message)

	// Under the keep policy its keys stay, and still count in its share,
	// whatever instance it comes back as, until another writer takes
	// them over.
	keeper := m.kubelet(t, "keeper")
	keeperToken := keeper.session(topics, "keeper-0")
	capacity := func(node string) map[string]any { return map[string]any{"node": node, "pods": 1} }
	for i := range maxKeys / 4 {
		a := keeper.writeTopic(topicmsg.TopicCapacity, keeperToken, capacity(fmt.Sprint("kept-", i)))
		require.Equal(t, http.StatusOK, a.status, "%s", a.message)
	}
	require.Equal(t, http.StatusNoContent, keeper.do(http.MethodDelete, protocol.PathSession, keeperToken, nil).status)
	keeperToken = keeper.session(topics, "keeper-1")
	before = refusals(t, m.Server, "topic_keys_per_writer")
	requireExhausted(t, m.Server, keeper.writeTopic(topicmsg.TopicCapacity, keeperToken, capacity("kept-new")),
		"topic_keys_per_writer", before, "a new key of a writer whose kept keys fill its share")
	a = good.writeTopic(topicmsg.TopicCapacity, goodToken, capacity("kept-0"))
	require.Equal(t, http.StatusOK, a.status, "another writer takes a kept key over: %s", a.message)
	a = keeper.writeTopic(topicmsg.TopicCapacity, keeperToken, capacity("kept-new"))
	require.Equal(t, http.StatusOK, a.status, "the key taken over left the writer's share: %s", a.message)
}

// A server held every connection it accepted, from any source, before
// any identity is known: one source that kept connections open (a
// keep-alive GET /healthz, which needs no certificate) used up the
// process's file descriptors, after which Accept failed and net/http's
// accept loop backed off for every peer (a server at RLIMIT_NOFILE 256
// answered nobody while one source held 300 connections, and everybody
// once it let go). Open connections are now bounded by Limits.MaxConns,
// and per source address by Limits.ConnsPerSource, the last quarter kept
// for sources that hold few: beyond them a connection is closed as it is
// accepted, unread, and the accept loop goes on to the next.
func TestOneSourceCannotHoldEveryConnection(t *testing.T) {
	const maxConns = 64 // a source's share 32, the last 16 kept for sources holding one
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		Limits: framework.Limits{MaxConns: maxConns}}, nil)
	// hold opens a keep-alive connection from the loopback address from
	// and asks for /healthz on it; it reports whether it was answered,
	// and keeps the connection open until the test ends.
	hold := func(from string) (net.Conn, bool) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", srv.Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return c, false
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return c, false // closed unread
		}
		resp.Body.Close()
		return c, resp.StatusCode == http.StatusOK
	}
	flood := func(from string, n int) (held []net.Conn) {
		for range n {
			if c, ok := hold(from); ok {
				held = append(held, c)
			}
		}
		return held
	}
	beforeSource, beforeAll := refusals(t, srv.Server, "conns_per_source"), refusals(t, srv.Server, "conns")

	evil := flood("127.0.0.1", 48)
	assert.Len(t, evil, maxConns/2, "one source holds half of the connections")
	assert.Equal(t, beforeSource+16, refusals(t, srv.Server, "conns_per_source"))
	_, ok := hold("127.0.0.2")
	require.True(t, ok, "another source is served while the first one floods")

	// A second source takes what is left of three quarters; the last
	// quarter is kept for sources that hold few.
	assert.Len(t, flood("127.0.0.3", 48), maxConns*3/4-maxConns/2-1, "a second source up to three quarters")
	assert.Greater(t, refusals(t, srv.Server, "conns"), beforeAll, "refused at the kept quarter")
	for _, from := range []string{"127.0.0.4", "127.0.0.5", "127.0.0.6"} {
		_, ok := hold(from)
		require.True(t, ok, "%s is served while two sources hold three quarters", from)
	}

	// A closed connection gives its place back.
	for _, c := range evil {
		_ = c.Close()
	}
	require.Eventually(t, func() bool { _, ok := hold("127.0.0.1"); return ok }, 10*time.Second, 20*time.Millisecond,
		"the first source is served again once its connections are closed")
}

// A peer's share of sessions was a quarter of MaxSessions, so four
// identities (four stolen node certificates) held every session, and
// the next kubelet to handshake (one that restarted, a new node) was
// refused resource_exhausted. The last quarter of MaxSessions is now
// kept for peers that hold few sessions (at most 1/4096 of them, at
// least one), so identities at their shares leave room for honest peers
// until over a thousand of them fill it.
func TestFourIdentitiesCannotTakeEverySession(t *testing.T) {
	const maxSessions = 16 // a peer's share 4, the last 4 kept for peers holding one
	bench := benchContract(t, "1.0.0")
	m := startAckServer(t, bench, func(cfg *framework.ServerConfig) { cfg.MaxSessions = maxSessions })
	hello := func(instance string) []byte {
		b, err := json.Marshal(handshake.Hello{Contract: bench.Name(), Component: "kubelet", Instance: instance,
			Release: "1.31.0", Offers: []handshake.Offer{bench.Offer()}})
		require.NoError(t, err)
		return b
	}
	beforePeer, beforeAll := refusals(t, m.Server, "sessions_per_peer"), refusals(t, m.Server, "sessions")
	var held []int
	for id := range 4 {
		p := m.kubelet(t, fmt.Sprint("evil-", id))
		n := 0
		for i := range maxSessions {
			if p.do(http.MethodPost, protocol.PathHandshake, "", hello(fmt.Sprintf("evil-%d-%d", id, i))).status != http.StatusOK {
				break
			}
			n++
		}
		held = append(held, n)
	}
	assert.Equal(t, []int{4, 4, 4, 1}, held, "sessions four identities took: their shares up to three quarters, then one")
	assert.Equal(t, beforePeer+3, refusals(t, m.Server, "sessions_per_peer"))
	assert.Equal(t, beforeAll+1, refusals(t, m.Server, "sessions"), "the fourth, at the kept quarter")
	for i := range 2 {
		p := m.kubelet(t, fmt.Sprint("node-", i))
		p.session(bench, fmt.Sprint("node-", i)) // requires a welcome
	}
	// A dry run says what a handshake would be told.
	p := m.kubelet(t, "evil-0")
	a := p.do(http.MethodPost, protocol.PathHandshake+"?"+protocol.QueryDryRun+"=1", "", hello("evil-0-new"))
	assert.Equal(t, string(framework.CodeResourceExhausted), a.code, "a dry run of a peer at its share: %s", a.message)
	assert.Equal(t, beforePeer+3, refusals(t, m.Server, "sessions_per_peer"), "a dry run counts nothing")
}

// Idempotency records were bounded per peer and contract (4,096 keys, 16
// MiB) but not over all peers: every identity that used keys could keep
// its 16 MiB for the window, so the records grew with the number of
// identities (10,000 node agents at their bounds: 160 GiB), and nothing
// an operator could set bounded them. Every peer's records together are
// now bounded by IdempotencyMaxBytes; beyond it the oldest records of
// the peer holding the most go first, so a peer holding less than an
// equal share keeps its records while others fill theirs.
func TestIdempotencyRecordsAreBoundedOverAllPeers(t *testing.T) {
	const maxBytes = 256 << 10 // about 16 records of a 16 KiB key
	bench := benchContract(t, "1.0.0")
	m := startAckServer(t, bench, func(cfg *framework.ServerConfig) { cfg.IdempotencyMaxBytes = maxBytes })
	body := mustJSON(t, benchmsg.Node(1))
	// keyed makes a call with an idempotency key and reports whether it
	// was answered from a record.
	keyed := func(p *mtlsPeer, token, key string) bool {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, m.URL+protocol.CallPath("bench", "1.0.0", "ReportStatus"), strings.NewReader(string(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", protocol.ContentTypeJSON)
		req.Header.Set(protocol.HeaderSession, token)
		req.Header.Set(protocol.HeaderIdempotencyKey, key)
		resp, err := p.hc.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp.Header.Get(protocol.HeaderReplayed) == "1"
	}
	good := m.kubelet(t, "good")
	goodToken := good.session(bench, "good")
	require.False(t, keyed(good, goodToken, "good-1"))

	long := strings.Repeat("k", 16<<10)
	type flooder struct {
		p     *mtlsPeer
		token string
	}
	var flood []flooder
	for id := range 4 {
		p := m.kubelet(t, fmt.Sprint("flood-", id))
		f := flooder{p, p.session(bench, fmt.Sprint("flood-", id))}
		for i := range 8 {
			require.False(t, keyed(f.p, f.token, fmt.Sprint(i, long)), "flood %d, key %d", id, i)
		}
		flood = append(flood, f)
	}
	assert.True(t, keyed(good, goodToken, "good-1"), "the honest peer's record is kept")
	last := flood[len(flood)-1]
	assert.True(t, keyed(last.p, last.token, fmt.Sprint(7, long)), "the newest record is kept")
	assert.False(t, keyed(flood[0].p, flood[0].token, fmt.Sprint(0, long)), "the oldest record of the peers holding the most is forgotten")
	reg, ok := m.Server.Metrics().Registerer().(*prometheus.Registry)
	require.True(t, ok)
	assert.Positive(t, sample(t, reg, "lockstep_idempotency_evictions_total", `limit="idempotency_bytes"`), "and the forgetting is counted")
	assert.Zero(t, sample(t, reg, "lockstep_idempotency_evictions_total", `limit="idempotency_keys_per_peer"`), "under its own bound")
}

// startAckServer starts a server of bench under mutual TLS that accepts
// every NodeStatus, configured by opt.
func startAckServer(t *testing.T, bench *framework.Contract, opt serverOpt) *mtlsServer {
	t.Helper()
	return startLimitsServer(t, framework.Limits{}, func(s *framework.Server) {
		ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		}
		framework.HandleUnary(s, bench, "ReportStatus", ack)
		framework.HandleBatch(s, bench, "ReportStatuses", ack)
	}, opt)
}
