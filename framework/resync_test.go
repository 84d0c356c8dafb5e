package framework_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

func TestResyncRequestReachesTheClient(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		// Heartbeats carry the request; the session must not lapse on real
		// time (and take the request with it) while a loaded machine stalls.
		c.SessionTTL, c.Heartbeat = 10*time.Second, 50*time.Millisecond
	})
	resynced := make(chan struct{}, 1)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Instance = "node-9"
		c.OnResync = func() { resynced <- struct{}{} }
	})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	assert.False(t, srv.Server.RequestResync("bench", "node-unknown"))
	require.True(t, srv.Server.RequestResync("bench", "node-9"))
	select {
	case <-resynced:
	case <-time.After(5 * time.Second):
		t.Fatal("resync request never reached the client")
	}
}

func TestResyncReachesAClientWhoseCallsKeepItsSessionAlive(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = time.Hour, 20*time.Minute // no heartbeat in this test's time
	})
	resynced := make(chan struct{}, 1)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Instance = "busy-node"
		c.OnResync = func() { resynced <- struct{}{} }
	})
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)
	require.True(t, srv.Server.RequestResync("bench", "busy-node"))
	_, err = report(timeout(t, 5*time.Second), cl, 2)
	require.NoError(t, err)
	select {
	case <-resynced:
	case <-time.After(10 * time.Second): // OnResync runs on a goroutine of its own; no heartbeat comes
		t.Fatal("the resync request did not ride the call's answer")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
