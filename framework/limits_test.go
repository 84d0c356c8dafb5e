package framework_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// startLimitsServer starts a nodecontroller under mutual TLS with limits,
// serving what register adds; opts change its config further.
func startLimitsServer(t *testing.T, limits framework.Limits, register func(*framework.Server), opts ...serverOpt) *mtlsServer {
	t.Helper()
	ca := frameworktest.NewCA(t)
	creds, dir := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	m := &mtlsServer{ca: ca, dir: dir}
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		MTLS: creds, SessionTTL: 30 * time.Second, Heartbeat: 5 * time.Second, DrainTimeout: 100 * time.Millisecond,
		Limits: limits}
	for _, o := range opts {
		o(&cfg)
	}
	m.Running = frameworktest.StartServer(t, cfg, register)
	return m
}

// kubelet is a raw HTTPS peer with the certificate lockstep://kubelet/name.
func (m *mtlsServer) kubelet(t *testing.T, name string) *mtlsPeer {
	t.Helper()
	return m.peer(t, m.issue(t, nil, certs.Spec{Component: "kubelet", Name: name}))
}

// session says hello for contract c as instance and returns the token.
func (p *mtlsPeer) session(c *framework.Contract, instance string) string {
	p.t.Helper()
	hello, err := json.Marshal(handshake.Hello{Contract: c.Name(), Component: "kubelet", Instance: instance,
		Release: "1.31.0", Offers: []handshake.Offer{c.Offer()}})
	require.NoError(p.t, err)
	a := p.do(http.MethodPost, protocol.PathHandshake, "", hello)
	require.Equal(p.t, http.StatusOK, a.status, "handshake of %s: %s %s", instance, a.code, a.message)
	var w handshake.Welcome
	require.NoError(p.t, json.Unmarshal(a.body, &w))
	return w.Session
}

// requireRefusedUnprocessed checks a per-peer limit's answer: 429,
// resource_exhausted, and not processed (the client may resend later).
func requireRefusedUnprocessed(t *testing.T, a rawAnswer, what string) {
	t.Helper()
	assert.Equal(t, http.StatusTooManyRequests, a.status, what)
	assert.Equal(t, string(framework.CodeResourceExhausted), a.code, what)
	assert.Equal(t, "1", a.header.Get(protocol.HeaderNotProcessed), what)
}

// The per-peer request rate: a peer that has spent its burst is refused,
// every entry counting once, while another peer keeps its own. The rate
// refills one request in 1,000 s, so counts decide, not timing.
func TestPerPeerRequestRate(t *testing.T) {
	const burst = 4
	m := startLimitsServer(t, framework.Limits{RequestsPerSecond: 0.001, Burst: burst}, func(s *framework.Server) {
		ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		}
		framework.HandleUnary(s, benchContract(t, "1.0.0"), "ReportStatus", ack)
		framework.HandleBatch(s, benchContract(t, "1.0.0"), "ReportStatuses", ack)
	})
	bench := benchContract(t, "1.0.0")
	before := refusals(t, m.Server, "rate")

	a, b := m.kubelet(t, "node-a"), m.kubelet(t, "node-b")
	tokenA := a.session(bench, "node-a") // the first of A's burst
	for i := range burst - 1 {
		got := a.call(tokenA)
		require.Equal(t, http.StatusOK, got.status, "call %d of A within its burst: %s", i, got.message)
	}
	const over = 3
	for i := range over {
		requireRefusedUnprocessed(t, a.call(tokenA), fmt.Sprintf("call %d of A over its rate", i))
	}
	hello, _ := json.Marshal(handshake.Hello{Contract: bench.Name(), Component: "kubelet", Instance: "node-a-2",
		Release: "1.31.0", Offers: []handshake.Offer{bench.Offer()}})
	requireRefusedUnprocessed(t, a.do(http.MethodPost, protocol.PathHandshake, "", hello), "a handshake of A over its rate")

	// B is another identity: its burst is untouched by A's.
	tokenB := b.session(bench, "node-b")
	for i := range burst - 1 {
		got := b.call(tokenB)
		require.Equal(t, http.StatusOK, got.status, "call %d of B, while A is refused: %s", i, got.message)
	}
	requireRefusedUnprocessed(t, b.call(tokenB), "B over its own rate")

	assert.Equal(t, float64(over+1+1), refusals(t, m.Server, "rate")-before, "every rate refusal counted")
	assert.Zero(t, refusals(t, m.Server, "in_flight_per_peer"), "no other limit was reached")
}

// The per-peer limit of calls in flight, over all the peer's sessions:
// with its calls held in the handler, the peer's next calls are refused
// (exactly those), another peer's are served, and once the held calls
// return the peer is served again.
func TestPerPeerInFlightCalls(t *testing.T) {
	const limit = 3
	entered, release := make(chan struct{}, limit), make(chan struct{})
	m := startLimitsServer(t, framework.Limits{InFlightPerPeer: limit}, func(s *framework.Server) {
		framework.HandleUnary(s, benchContract(t, "1.0.0"), "ReportStatus", func(ctx context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			if n.NodeName == benchmsg.Node(0).NodeName {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &benchmsg.Ack{Accepted: true}, nil
		})
		framework.HandleBatch(s, benchContract(t, "1.0.0"), "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		})
	})
	bench := benchContract(t, "1.0.0")
	call := func(p *mtlsPeer, token string, node int) rawAnswer {
		return p.do(http.MethodPost, protocol.CallPath("bench", "1.0.0", "ReportStatus"), token, mustJSON(t, benchmsg.Node(node)))
	}
	a, b := m.kubelet(t, "node-a"), m.kubelet(t, "node-b")
	tokensA := []string{a.session(bench, "node-a"), a.session(bench, "node-a-2")}
	tokenB := b.session(bench, "node-b")
	before := refusals(t, m.Server, "in_flight_per_peer")

	// A fills its limit with held calls, spread over its two sessions.
	held := make(chan rawAnswer, limit)
	var wg sync.WaitGroup
	for i := range limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			held <- call(a, tokensA[i%2], 0)
		}()
	}
	for range limit {
		select {
		case <-entered:
		case <-time.After(20 * time.Second):
			t.Fatal("the held calls did not reach the handler")
		}
	}

	const over = 4
	for i := range over {
		requireRefusedUnprocessed(t, call(a, tokensA[i%2], 1), fmt.Sprintf("call %d of A over its calls in flight", i))
	}
	got := call(b, tokenB, 1)
	assert.Equal(t, http.StatusOK, got.status, "B is served while A is at its limit: %s", got.message)
	assert.Equal(t, float64(over), refusals(t, m.Server, "in_flight_per_peer")-before, "exactly the refused calls counted")

	close(release)
	wg.Wait()
	close(held)
	for ans := range held {
		assert.Equal(t, http.StatusOK, ans.status, "a held call finished: %s", ans.message)
	}
	got = call(a, tokensA[0], 1)
	assert.Equal(t, http.StatusOK, got.status, "A is served again once its calls returned: %s", got.message)
	assert.Equal(t, float64(over), refusals(t, m.Server, "in_flight_per_peer")-before)
}

// A watcher that never reads: once the changes waiting for it pass
// Limits.WatchQueuedBytes the server drops them and closes the stream,
// holding nothing more for it however much is written; the watcher that
// reads keeps receiving every change on its one stream; and the stalled
// watcher, when it finally reads, finds a closing frame with reason
// overflow at the end of what it was sent.
func TestWatcherThatNeverReadsGetsOverflow(t *testing.T) {
	// Parallel: its server, credentials and watchers are its own, and what it
	// counts is its own server's registry; it waits on sockets, not CPU.
	t.Parallel()
	const (
		queuedLimit = 256 << 10
		keys        = 16
		padding     = 4 << 10 // a round of changes is 16 new keys × ~4 KiB: well under the limit
	)
	var status *framework.TopicWriter[benchmsg.NodeStatus]
	topics := topicContract(t, "1.0.0")
	m := startLimitsServer(t, framework.Limits{WatchQueuedBytes: queuedLimit}, func(s *framework.Server) {
		status = framework.ServeTopic[benchmsg.NodeStatus](s, topics, topicmsg.TopicNodeStatus)
		framework.ServeTopic[topicmsg.NodeHealth](s, topics, topicmsg.TopicNodeHealth)
		framework.ServeClientTopic[topicmsg.Lease](s, topics, topicmsg.TopicLease)
		framework.ServeClientTopic[topicmsg.Capacity](s, topics, topicmsg.TopicCapacity)
		framework.ServeOtherTopics(s, topics)
	})
	// Each round writes keys of its own: changes of one key replace each
	// other in a watcher's queue, so only distinct keys pile up.
	writeRound := func(round int) {
		t.Helper()
		for k := range keys {
			n := benchmsg.Node(round*keys + k)
			n.Images = append(slices.Clone(n.Images), fmt.Sprintf("round-%d-%s", round, strings.Repeat("x", padding)))
			require.NoError(t, status.Set(n))
		}
	}
	writeRound(0)

	tcp, resp := m.stalledWatch(t, topics, "slow")

	// The watcher that reads: an informer of another kubelet.
	creds, _ := frameworktest.NewCredentials(t, m.ca, certs.Spec{Component: "kubelet", Name: "fast"})
	tr := creds.Transport("")
	t.Cleanup(tr.CloseIdleConnections)
	cl := topicClient(t, "1.0.0", []string{m.URL}, func(c *framework.ClientConfig) { c.Transport = tr; c.Instance = "fast" })
	inf, err := framework.Watch[benchmsg.NodeStatus](context.Background(), cl, topicmsg.TopicNodeStatus, framework.InformerHandlers[benchmsg.NodeStatus]{})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(timeout(t, 10*time.Second)))

	slow := func() (framework.WatcherStats, bool) { return m.nodeStatusWatcher("slow") }
	// received waits until the reading watcher has a round: its changes
	// arrive in order, so its last key means all of them.
	received := func(round int) {
		t.Helper()
		last := benchmsg.Node(round*keys + keys - 1).NodeName
		want, ok := status.TopicView.Version(last)
		require.True(t, ok)
		require.Eventually(t, func() bool { got, ok := inf.Version(last); return ok && got == want }, 10*time.Second, time.Millisecond,
			"the reading watcher received round %d", round)
	}
	// Rounds of changes, each received by the reading watcher before the
	// next, until the stalled one overflows (a socket buffer of 128 KiB,
	// the stalled round, then 256 KiB: a dozen rounds; at most 200).
	before := refusals(t, m.Server, "watch_queued_bytes")
	round := 0
	for round < 200 && refusals(t, m.Server, "watch_queued_bytes") == before {
		round++
		writeRound(round)
		received(round)
	}
	require.Equal(t, before+1, refusals(t, m.Server, "watch_queued_bytes"), "the stalled watcher overflowed, and only it")
	overflowed := round
	t.Logf("the stalled watcher overflowed in round %d (rounds of %d KiB)", overflowed, keys*padding>>10)

	// However much more is written, the server queues nothing for it.
	for range 10 {
		round++
		writeRound(round)
		received(round)
		if st, ok := slow(); ok {
			require.Zero(t, st.Queued, "round %d queued for a closed watcher", round)
		}
	}
	requireCacheMatches(t, "the reading watcher", inf, status.TopicView, 10*time.Second)
	assert.Equal(t, int64(1), inf.Stats().Streams, "the reading watcher kept its one stream")
	assert.Equal(t, before+1, refusals(t, m.Server, "watch_queued_bytes"), "the reading watcher never overflowed")

	// The stalled watcher reads at last: what was on its way before the
	// overflow (nothing written after it), then the closing frame, then
	// the end of the stream.
	// (A larger receive buffer now lets the kernel open its window at once,
	// rather than the sender probing a zero window at growing intervals.)
	require.NoError(t, tcp.SetReadBuffer(4<<20))
	require.NoError(t, tcp.SetReadDeadline(time.Now().Add(30*time.Second)))
	br := bufio.NewReader(io.LimitReader(resp.Body, 64<<20))
	var last struct {
		Type   string `json:"type"`
		Key    string `json:"key"`
		Reason string `json:"reason"`
	}
	lines, latest := 0, 0
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			require.ErrorIs(t, err, io.EOF, "the stream ends after %d frames", lines)
			break
		}
		lines++
		require.NoError(t, json.Unmarshal(line, &last), "frame %d", lines)
		var n int
		if _, err := fmt.Sscanf(last.Key, "node-%d", &n); last.Type == protocol.FrameSet && err == nil {
			latest = max(latest, n/keys)
		}
	}
	assert.Equal(t, protocol.FrameClosing, last.Type, "the last of %d frames", lines)
	assert.Equal(t, protocol.CloseOverflow, last.Reason)
	assert.LessOrEqual(t, latest, overflowed, "the stalled watcher was sent no change written after its overflow")
	require.Eventually(t, func() bool { _, ok := slow(); return !ok }, 10*time.Second, 10*time.Millisecond,
		"the stalled stream is gone once it was told")
}

// A watcher that stops reading is cut once a write to it has waited out
// the watch write timeout, and its stream is gone at once: the server does
// not wait to send TLS's close_notify into a connection nobody reads
// (tls.Conn.Close would try for 5 s, holding the stream's goroutine and
// connection).
func TestStuckWatcherIsCutAtItsWriteTimeout(t *testing.T) {
	const (
		writeTimeout = 300 * time.Millisecond
		keys         = 128
		padding      = 16 << 10 // 2 MiB in all: far more than the kernel holds for the stuck watcher
	)
	ca := frameworktest.NewCA(t)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	m := &mtlsServer{ca: ca}
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: creds,
		SessionTTL: 30 * time.Second, Heartbeat: 5 * time.Second, DrainTimeout: 100 * time.Millisecond}
	framework.SetWatchWriteTimeout(&cfg, writeTimeout)
	var status *framework.TopicWriter[benchmsg.NodeStatus]
	topics := topicContract(t, "1.0.0")
	m.Running = frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		status = framework.ServeTopic[benchmsg.NodeStatus](s, topics, topicmsg.TopicNodeStatus)
		framework.ServeTopic[topicmsg.NodeHealth](s, topics, topicmsg.TopicNodeHealth)
		framework.ServeClientTopic[topicmsg.Lease](s, topics, topicmsg.TopicLease)
		framework.ServeClientTopic[topicmsg.Capacity](s, topics, topicmsg.TopicCapacity)
		framework.ServeOtherTopics(s, topics)
	})

	m.stalledWatch(t, topics, "stuck")
	stuck := func() bool { _, ok := m.nodeStatusWatcher("stuck"); return ok }
	require.True(t, stuck())

	for k := range keys {
		n := benchmsg.Node(k)
		n.Images = append(slices.Clone(n.Images), strings.Repeat("x", padding))
		require.NoError(t, status.Set(n))
	}
	written := time.Now()
	// The write that blocked began while the keys were being set, so the
	// stream ends within the write timeout of the last Set, plus the time
	// a loaded machine takes to notice; waiting for close_notify would
	// add 5 s.
	require.Eventually(t, func() bool { return !stuck() }, 3*time.Second, 10*time.Millisecond,
		"the stuck watcher's stream is gone soon after its write timed out")
	t.Logf("the stuck watcher was gone %s after the last write", time.Since(written).Round(time.Millisecond))
}

// stalledWatch opens a NodeStatus watch as kubelet instance name, over a
// raw TLS connection with a 4 KiB receive buffer, and reads its answer's
// header and nothing after: a watcher that stopped reading. It returns the
// TCP connection under the TLS one, to read on later, and the answer.
func (m *mtlsServer) stalledWatch(t *testing.T, topics *framework.Contract, name string) (*net.TCPConn, *http.Response) {
	t.Helper()
	cert := m.issue(t, nil, certs.Spec{Component: "kubelet", Name: name})
	token := m.peer(t, cert).session(topics, name)
	raw, err := net.Dial("tcp", m.Addr)
	require.NoError(t, err)
	tcp := raw.(*net.TCPConn)
	require.NoError(t, tcp.SetReadBuffer(4<<10))
	conn := tls.Client(tcp, &tls.Config{RootCAs: m.ca.Pool(), Certificates: []tls.Certificate{*cert},
		ServerName: "localhost", MinVersion: tls.VersionTLS12})
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, nodeStatusWatch(token, ""))
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return tcp, resp
}

// nodeStatusWatcher returns the server's stats of the NodeStatus watcher
// of client instance, if it has one.
func (m *mtlsServer) nodeStatusWatcher(instance string) (framework.WatcherStats, bool) {
	for _, st := range m.Server.TopicStats() {
		if st.Topic != topicmsg.TopicNodeStatus {
			continue
		}
		for _, w := range st.Watchers {
			if w.Peer.Instance == instance {
				return w, true
			}
		}
	}
	return framework.WatcherStats{}, false
}
