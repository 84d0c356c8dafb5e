package framework_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// A handler that passes on a downstream peer's incompatible_peer must not
// make its caller resend a call it already handled.
func TestHandlerErrorWithAResendCodeIsNotResent(t *testing.T) {
	var ran atomic.Int64
	c := benchContract(t, "1.0.0")
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"}, func(s *framework.Server) {
		framework.HandleUnary(s, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			ran.Add(1)
			return nil, framework.Errorf(framework.CodeIncompatiblePeer, "the scheduler downstream speaks another version")
		})
		framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			ran.Add(1)
			return nil, framework.Errorf(framework.CodeHandshakeRequired, "downstream session lost")
		})
	})
	for _, auto := range []*framework.AutoBatch{nil, {}} {
		cl := benchClient(t, "1.0.0", []string{srv.URL}, func(cfg *framework.ClientConfig) { cfg.AutoBatch = auto })
		before := ran.Load()
		_, err := report(timeout(t, 5*time.Second), cl, 1)
		assert.Equal(t, framework.CodeUnavailable, framework.CodeOf(err))
		assert.Contains(t, err.Error(), "downstream speaks another version")
		assert.Equal(t, int64(1), ran.Load()-before, "the handler ran once")
	}
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	res, err := framework.CallBatch[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 5*time.Second), cl, "ReportStatuses",
		[]*benchmsg.NodeStatus{benchmsg.Node(1)})
	require.NoError(t, err)
	assert.Equal(t, framework.CodeUnavailable, framework.CodeOf(res[0].Err))
}

// A refusal the server cannot hold open, and a welcome the client rejects
// by its own rules, are retried with backoff, not in a hot loop.
func TestRefusalsTheServerCannotHoldAreRetriedWithBackoff(t *testing.T) {
	var joined atomic.Int64
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.OnPeerJoined = func(framework.SessionInfo) { joined.Add(1) }
	})
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.PeerRelease = ">= 2.0" })
	time.Sleep(time.Second)
	// The backoff tops out at 100ms: about ten attempts a second, where the
	// hot loop opened thousands of sessions.
	assert.Less(t, joined.Load(), int64(40), "sessions opened in a second")
	assert.Positive(t, joined.Load())
	assert.Contains(t, cl.Ready().Error(), "release")
}

func TestMultiCallsAreBounded(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	token := openSession(t, srv.URL, "1.0.0")
	call := `{"method":"ReportStatus","request":` + string(mustMarshal(t, benchmsg.Node(1))) + `}`
	body := `{"calls":[` + strings.Repeat(call+",", framework.MaxMultiCalls) + call + `]}`
	a := do(t, http.MethodPost, srv.URL+protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod),
		map[string]string{protocol.HeaderSession: token}, []byte(body))
	assert.Equal(t, "invalid_argument", a.code)
	assert.Contains(t, a.message, "at most 256 calls")
	assert.Zero(t, srv.handled.Load())
}

func TestResyncReachesAClientWhoseCallsKeepItsSessionAlive(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = 10*time.Second, 2*time.Second // no heartbeat in this test's time
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
	case <-time.After(time.Second):
		t.Fatal("the resync request did not ride the call's answer")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
