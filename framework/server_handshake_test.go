package framework_test

// Tests of the handshake as the server answers it: sessions a restart
// forgot, refusals held until a drain, release constraints.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

func TestStaleSessionAfterRestartIsHandshakeRequired(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	token := openSession(t, srv.URL, "1.0.0")
	valid, _ := json.Marshal(benchmsg.Node(1))
	require.NoError(t, srv.Stop())
	again := startBench(t, srv.Addr, "1.0.0")
	a := do(t, http.MethodPost, again.URL+protocol.CallPath("bench", "1.0.0", "ReportStatus"),
		map[string]string{protocol.HeaderSession: token}, valid)
	assert.Equal(t, http.StatusConflict, a.status)
	assert.Equal(t, "handshake_required", a.code)
	assert.Equal(t, "1", a.header.Get(protocol.HeaderNotProcessed))
}

func TestHandshakeWaitIsReleasedWhenTheServerDrains(t *testing.T) {
	// On a fake clock the held refusal's 20s never pass: only the drain can
	// release it. At rest the server's clock has one waiter (its sweep); a
	// second is the hold's timer, so the handshake is held. The clock moves
	// on its own once the test ends, for the drain to finish.
	fc := clockwork.NewFakeClock()
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) })
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) { c.Clock = fc })
	t.Cleanup(func() { go runClock(fc, stopped) })
	require.NoError(t, fc.BlockUntilContext(timeout(t, 10*time.Second), 1))
	done := make(chan rawAnswer, 1)
	start := time.Now()
	go func() {
		done <- do(t, http.MethodPost, srv.URL+protocol.PathHandshake+"?wait=20s", nil, hello(t, "bench", "kubelet", "2.0.0"))
	}()
	require.NoError(t, fc.BlockUntilContext(timeout(t, 10*time.Second), 2), "the refusal is held")
	select {
	case a := <-done:
		t.Fatalf("a held refusal returned early: %d %s", a.status, a.body)
	default:
	}
	go func() { _ = srv.Stop() }()
	a := <-done
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, http.StatusConflict, a.status)
	var refusal handshake.Refusal
	require.NoError(t, json.Unmarshal(a.details, &refusal))
	assert.Equal(t, handshake.ReasonDraining, refusal.Reason)
	assert.Equal(t, "1", a.header.Get(protocol.HeaderDraining))
}

func TestReleaseConstraints(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.PeerRelease = map[string]string{"bench": ">= 1.31, < 1.32"}
	})
	b, _ := json.Marshal(handshake.Hello{Contract: "bench", Component: "kubelet", Instance: "x", Release: "1.30.9",
		Offers: []handshake.Offer{benchContract(t, "1.0.0").Offer()}})
	a := do(t, http.MethodPost, srv.URL+protocol.PathHandshake, nil, b)
	assert.Equal(t, "incompatible_peer", a.code)
	assert.Contains(t, a.message, "1.30.9")

	// The client's own constraint on the server's release.
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.PeerRelease = ">= 2.0" })
	var callErr error
	require.Eventually(t, func() bool {
		_, callErr = report(context.Background(), cl, 1, framework.FailFast())
		return framework.CodeOf(callErr) == framework.CodeIncompatiblePeer
	}, 5*time.Second, 10*time.Millisecond)
	assert.True(t, strings.Contains(callErr.Error(), "release"), callErr.Error())
}
