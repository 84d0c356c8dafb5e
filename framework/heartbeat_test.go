package framework_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// TestIdleSessionLivesOnHeartbeatsAndALostClientIsReported: heartbeats
// alone keep an idle session for many TTLs, and a client that vanishes is
// reported lost once it has been idle for a TTL, not before, and within a
// TTL, a heartbeat interval and a scan of its last word. The server runs on
// a fake clock whose expiry scans the test runs one at a time, so both are
// measured on the server's clock, whatever the machine's load; the client
// heartbeats on real time.
func TestIdleSessionLivesOnHeartbeatsAndALostClientIsReported(t *testing.T) {
	const ttl, beat = 600 * time.Millisecond, 100 * time.Millisecond
	clock := newScanClock(beat / 2) // the expiry loop scans every half heartbeat
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) })
	joined := make(chan framework.SessionInfo, 4)
	lost := make(chan framework.SessionInfo, 4)
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat, c.Clock = ttl, beat, clock
		c.OnPeerJoined = func(s framework.SessionInfo) { joined <- s }
		c.OnPeerLost = func(s framework.SessionInfo) { lost <- s }
	})
	t.Cleanup(func() { go runClock(clock.FakeClock, stopped) }) // the server's drain waits on its clock
	tr := &cuttable{next: framework.NewTransport(nil)}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	beats := &heartbeatAttempts{next: tr}
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport = beats
		c.Instance = "node-1"
	})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	j := <-joined
	assert.Equal(t, "node-1", j.Peer.Instance)
	assert.Equal(t, "kubelet", j.Peer.Component)
	noneLost := func(when string) {
		t.Helper()
		select {
		case l := <-lost:
			t.Fatalf("%s: an idle session with heartbeats was lost: %+v", when, l)
		default:
		}
	}

	// Idle for three TTLs of the server's clock. A client sends its
	// heartbeats one after another, so once it sends another the one
	// before was answered: the session was renewed at this step's instant
	// or the one before. Each step then moves the clock on by a heartbeat
	// interval and scans, so each scan sees it idle for two intervals at
	// most; without renewals it would lapse at the seventh step.
	for step := range 3 * int(ttl/beat) {
		n := beats.n.Load()
		require.Eventually(t, func() bool { return beats.n.Load() > n }, 10*time.Second, 5*time.Millisecond,
			"no heartbeat after step %d", step)
		clock.Advance(beat)
		clock.scan(t)
		noneLost(fmt.Sprintf("step %d", step))
	}
	assert.GreaterOrEqual(t, tr.count(protocol.PathHeartbeat), int64(3*ttl/beat), "heartbeats were answered")
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)

	// The client vanishes without a word. Its next heartbeat attempt fails,
	// so none is still on its way: the session's last renewal was at or
	// before cutAt. The clock then moves on by a scan period at a time.
	tr.cut.Store(true)
	n := beats.n.Load()
	require.Eventually(t, func() bool { return beats.n.Load() > n }, 10*time.Second, 5*time.Millisecond, "no heartbeat after the cut")
	cutAt := clock.Now()
	var got *framework.SessionInfo
	for got == nil {
		clock.Advance(beat / 2)
		clock.scan(t)
		select {
		case l := <-lost:
			got = &l
		default:
			require.Less(t, clock.Since(cutAt), ttl+beat+beat/2,
				"a vanished client was not reported lost within its TTL, a heartbeat interval and a scan")
		}
	}
	assert.Equal(t, "node-1", got.Peer.Instance)
	assert.GreaterOrEqual(t, got.Idle, ttl, "reported lost only once idle for its TTL")
	assert.Greater(t, clock.Since(cutAt), ttl, "reported lost only once idle for its TTL")
	assert.Empty(t, srv.Server.Sessions())
}

// heartbeatAttempts counts the heartbeat requests a client attempts,
// answered or not.
type heartbeatAttempts struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (h *heartbeatAttempts) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == protocol.PathHeartbeat {
		h.n.Add(1)
	}
	return h.next.RoundTrip(r)
}

// scanClock is a fake clock on which a test runs a server's session
// expiry scans one at a time: the expiry loop's ticker (the only one of
// period scanPeriod) ticks only when scan sends it a tick, so the test
// knows which fake instant each scan saw and that it has finished.
type scanClock struct {
	*clockwork.FakeClock
	period time.Duration
	ticks  chan time.Time
}

func newScanClock(period time.Duration) *scanClock {
	return &scanClock{FakeClock: clockwork.NewFakeClockAt(time.Now()), period: period, ticks: make(chan time.Time)}
}

func (c *scanClock) NewTicker(d time.Duration) clockwork.Ticker {
	if d != c.period {
		return c.FakeClock.NewTicker(d)
	}
	return scanTicker(c.ticks)
}

// scan runs one expiry scan at the clock's current instant and returns
// once it has finished: the second tick is taken only when the loop is
// back at its select, and the scan it starts sees the same instant.
func (c *scanClock) scan(t *testing.T) {
	t.Helper()
	for range 2 {
		select {
		case c.ticks <- c.Now():
		case <-time.After(10 * time.Second):
			t.Fatal("the server's expiry loop took no tick")
		}
	}
}

// scanTicker is the ticker of a scanClock's expiry loop; only scan ticks it.
type scanTicker chan time.Time

func (s scanTicker) Chan() <-chan time.Time { return s }
func (scanTicker) Reset(time.Duration)      {}
func (scanTicker) Stop()                    {}

// TestSessionsOfManyClientsShareOneHeartbeatRequest: one heartbeat
// request per interval keeps all fifty sessions of a process alive, and a
// restarted server's answer makes every client handshake again. The
// servers run on fake clocks whose expiry scans the test runs one at a
// time, so a session lapses only when the server's clock has passed its
// TTL with no renewal, however long the loaded machine takes to send the
// heartbeats; the clients heartbeat on real time.
func TestSessionsOfManyClientsShareOneHeartbeatRequest(t *testing.T) {
	const ttl, beat = time.Second, 100 * time.Millisecond
	clock := newScanClock(beat / 2)
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) })
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat, c.Clock = ttl, beat, clock
	})
	t.Cleanup(func() { go runClock(clock.FakeClock, stopped) }) // the server's drain waits on its clock
	tr := &cuttable{next: framework.NewTransport(nil)}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	beats := framework.NewHeartbeats(frameworktest.Quiet(), nil)
	const nodes = 50
	clients := make([]*framework.Client, nodes)
	for i := range clients {
		clients[i] = benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
			c.Transport, c.Heartbeats = tr, beats
		})
	}
	for _, cl := range clients {
		require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	}
	require.Len(t, srv.Server.Sessions(), nodes)
	// Fifteen heartbeat requests, all idle: one request per interval for
	// all fifty sessions, not one per session (which would send them in a
	// fraction of one interval). The group sends its requests one after
	// another, so once it sends another the one before was answered: as in
	// TestIdleSessionLivesOnHeartbeatsAndALostClientIsReported, each step
	// moves the server's clock on by an interval and scans, and the
	// fifteen steps span more than a TTL of it.
	before, from := tr.count(protocol.PathHeartbeat), clock.Now()
	start := time.Now()
	for step := range 15 {
		n := tr.count(protocol.PathHeartbeat)
		require.Eventually(t, func() bool { return tr.count(protocol.PathHeartbeat) > n }, 10*time.Second, 5*time.Millisecond,
			"no heartbeat after step %d", step)
		clock.Advance(beat)
		clock.scan(t)
	}
	assert.GreaterOrEqual(t, tr.count(protocol.PathHeartbeat)-before, int64(15))
	assert.GreaterOrEqual(t, time.Since(start), 1100*time.Millisecond, "one request per 100ms interval")
	assert.Greater(t, clock.Since(from), ttl, "more than a TTL passed on the server's clock")
	assert.Len(t, srv.Server.Sessions(), nodes, "every session stayed alive")

	// A server that restarted has none of the sessions: the heartbeat
	// answer says so and every client handshakes again.
	require.NoError(t, srv.Kill())
	again := startBench(t, srv.Addr, "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = ttl, beat
	})
	require.Eventually(t, func() bool { return len(again.Server.Sessions()) == nodes }, 10*time.Second, 10*time.Millisecond)
	for _, cl := range clients {
		_, err := report(timeout(t, 5*time.Second), cl, 1)
		require.NoError(t, err)
	}
}
