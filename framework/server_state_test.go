package framework

import (
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerMovesOnlyForwardThroughItsTable(t *testing.T) {
	for from, tos := range serverMoves {
		for _, to := range tos {
			assert.Greater(t, to, serverState(from), "%s -> %s", serverState(from), to)
		}
	}
	assert.Empty(t, serverMoves[serverStopped], "nothing leaves stopped")

	s := &Server{drainCh: make(chan struct{}), stopCh: make(chan struct{})}
	assert.PanicsWithValue(t, "lockstep: server cannot move from registering to closing",
		func() { s.moveLocked(serverClosing) }, "a server closes only after it began to drain")
	assert.True(t, s.moveLocked(serverDraining))
	assert.True(t, s.Draining())
	assert.False(t, s.moveLocked(serverRunning), "a server that began to drain never starts running")
	assert.False(t, s.moveLocked(serverDraining), "a second drain is no move")
	assert.True(t, s.moveLocked(serverStopped))
	assert.False(t, s.moveLocked(serverClosing), "a stopped server is past closing")
	assert.Equal(t, serverStopped, s.state)
}

func TestServerClosedBeforeItStartsNeverRuns(t *testing.T) {
	s, err := NewServer(ServerConfig{Component: "nodecontroller", Release: "1.0.0", NoMetrics: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	select {
	case <-s.DrainStarted():
	default:
		t.Fatal("Close did not announce the drain")
	}
	require.NoError(t, s.Start())
	s.mu.RLock()
	state, loop := s.state, s.loopDone
	s.mu.RUnlock()
	assert.Equal(t, serverStopped, state)
	assert.Nil(t, loop, "a stopped server's session clock never starts")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Serve(l), "Serve after Close returns at once")
	_, err = net.Dial("tcp", l.Addr().String())
	assert.Error(t, err, "Serve released the address")
	assert.Panics(t, func() { s.Handle("/own", http.NotFoundHandler()) }, "nothing registers on a stopped server")
	assert.NoError(t, s.Shutdown(t.Context()), "Shutdown of a stopped server returns at once")
}
