package framework_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

func TestIdleSessionLivesOnHeartbeatsAndALostClientIsReported(t *testing.T) {
	joined := make(chan framework.SessionInfo, 4)
	lost := make(chan framework.SessionInfo, 4)
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = 600*time.Millisecond, 100*time.Millisecond
		c.OnPeerJoined = func(s framework.SessionInfo) { joined <- s }
		c.OnPeerLost = func(s framework.SessionInfo) { lost <- s }
	})
	tr := &cuttable{next: framework.NewTransport(nil)}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport = tr
		c.Instance = "node-1"
	})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	j := <-joined
	assert.Equal(t, "node-1", j.Peer.Instance)
	assert.Equal(t, "kubelet", j.Peer.Component)

	// Idle for three TTLs: heartbeats keep the session. Nineteen
	// heartbeats, 100ms apart, span them: the count proves the time passed.
	require.Eventually(t, func() bool { return tr.count(protocol.PathHeartbeat) >= 19 }, 20*time.Second, 10*time.Millisecond)
	select {
	case l := <-lost:
		t.Fatalf("an idle session with heartbeats was lost: %+v", l)
	default:
	}
	assert.GreaterOrEqual(t, tr.count(protocol.PathHeartbeat), int64(5))
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)

	// The client vanishes without a word: lost within TTL plus a heartbeat
	// interval (plus the expiry scan), measured on the server's clock.
	tr.cut.Store(true)
	cutAt := time.Now()
	select {
	case l := <-lost:
		assert.Equal(t, "node-1", l.Peer.Instance)
		assert.Less(t, time.Since(cutAt), 600*time.Millisecond+100*time.Millisecond+200*time.Millisecond)
		assert.GreaterOrEqual(t, l.Idle, 600*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("a vanished client was never reported lost")
	}
	assert.Empty(t, srv.Server.Sessions())
}

func TestSessionsOfManyClientsShareOneHeartbeatRequest(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = time.Second, 100*time.Millisecond
	})
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
	// fraction of one interval); they span more than a TTL.
	before := tr.count(protocol.PathHeartbeat)
	start := time.Now()
	require.Eventually(t, func() bool { return tr.count(protocol.PathHeartbeat)-before >= 15 }, 20*time.Second, 5*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 1100*time.Millisecond, "one request per 100ms interval, so more than a TTL passed")
	assert.Len(t, srv.Server.Sessions(), nodes, "every session stayed alive")

	// A server that restarted has none of the sessions: the heartbeat
	// answer says so and every client handshakes again.
	require.NoError(t, srv.Kill())
	again := startBench(t, srv.Addr, "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = time.Second, 100*time.Millisecond
	})
	require.Eventually(t, func() bool { return len(again.Server.Sessions()) == nodes }, 10*time.Second, 10*time.Millisecond)
	for _, cl := range clients {
		_, err := report(timeout(t, 5*time.Second), cl, 1)
		require.NoError(t, err)
	}
}
