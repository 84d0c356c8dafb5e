package framework

import (
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/lifecycle"
)

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
	state, loop := s.life.State(), s.loopDone
	s.mu.RUnlock()
	assert.Equal(t, lifecycle.Stopped, state)
	assert.Nil(t, loop, "a stopped server's session clock never starts")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Serve(l), "Serve after Close returns at once")
	_, err = net.Dial("tcp", l.Addr().String())
	assert.Error(t, err, "Serve released the address")
	assert.Panics(t, func() { s.Handle("/own", http.NotFoundHandler()) }, "nothing registers on a stopped server")
	assert.NoError(t, s.Shutdown(t.Context()), "Shutdown of a stopped server returns at once")
}
