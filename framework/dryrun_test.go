package framework_test

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// A dry-run handshake answers what a real one would, and leaves no trace:
// no session, no peer hook.
func TestDryRunHandshakeAnswersWithoutOpeningASession(t *testing.T) {
	var joined atomic.Int64
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.OnPeerJoined = func(framework.SessionInfo) { joined.Add(1) }
	})
	dry := srv.URL + protocol.PathHandshake + "?" + protocol.QueryDryRun + "=1"

	a := do(t, http.MethodPost, dry, nil, hello(t, "bench", "kubelet", "1.0.0"))
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	var w handshake.Welcome
	require.NoError(t, json.Unmarshal(a.body, &w))
	assert.Empty(t, w.Session, "a dry-run welcome carries no session")
	assert.Equal(t, "1.0.0", w.Version)
	assert.Equal(t, benchContract(t, "1.0.0").Fingerprint(), w.Fingerprint)
	assert.Empty(t, srv.Server.Sessions())

	a = do(t, http.MethodPost, dry+"&wait=20s", nil, hello(t, "bench", "kubelet", "2.0.0"))
	assert.Equal(t, http.StatusConflict, a.status, "a dry run is never held")
	var refusal handshake.Refusal
	require.NoError(t, json.Unmarshal(a.details, &refusal))
	assert.Equal(t, handshake.ReasonVersionMismatch, refusal.Reason)
	assert.Empty(t, srv.Server.Sessions())
	assert.Zero(t, joined.Load())

	// A real handshake afterwards still works and is the only session.
	openSession(t, srv.URL, "1.0.0")
	assert.Len(t, srv.Server.Sessions(), 1)
}
