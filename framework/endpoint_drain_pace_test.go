package framework_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// drainingHellos is a server on 127.0.0.1 that refuses every hello as a
// draining lockstep server does, counting them.
func drainingHellos(t *testing.T) (url string, hellos *atomic.Int64) {
	t.Helper()
	hellos = new(atomic.Int64)
	refusal := handshake.Refusal{Code: handshake.CodeIncompatiblePeer, Reason: handshake.ReasonDraining,
		Contract: "bench", Message: "nodecontroller is draining: handshake with another endpoint"}
	details, err := json.Marshal(refusal)
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"code": "incompatible_peer", "message": refusal.Message, "details": json.RawMessage(details)})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != protocol.PathHandshake {
			http.NotFound(w, r)
			return
		}
		hellos.Add(1)
		w.Header().Set(protocol.HeaderDraining, "1")
		w.Header().Set(protocol.HeaderNotProcessed, "1")
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", protocol.ContentTypeJSON)
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hellos
}

// A draining server's refusal says "not here": the endpoint loop paces its
// hellos there apart (from 100 ms, doubling, to 500 ms) instead of at its
// reconnect backoff (5 ms growing to 100 ms), while calls go to another
// endpoint. Counted over 3 s of a fake clock that moves only when the
// endpoint waits.
func TestHellosToADrainingServerArePaced(t *testing.T) {
	drainingURL, hellos := drainingHellos(t)
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	// Calls go to the serving endpoint meanwhile (on the real clock).
	both := benchClient(t, "1.0.0", []string{drainingURL, srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ack, err := report(ctx, both, 1)
	require.NoError(t, err)
	assert.True(t, ack.Accepted)
	require.Eventually(t, func() bool { return hellos.Load() >= 1 }, 10*time.Second, time.Millisecond)
	both.Close()

	// A client of the draining endpoint alone, on a fake clock: its loop
	// waits on one timer. Step the clock 10 ms at a time, each time until
	// the loop waits again (after a hello, on its next timer).
	hellos.Store(0)
	clock := clockwork.NewFakeClock()
	benchClient(t, "1.0.0", []string{drainingURL}, func(c *framework.ClientConfig) { c.Clock = clock })
	require.Eventually(t, func() bool { return hellos.Load() == 1 }, 10*time.Second, time.Millisecond)
	waiters := 1
	require.NoError(t, clock.BlockUntilContext(ctx, waiters))
	const simulated, step = 3 * time.Second, 10 * time.Millisecond
	for elapsed := time.Duration(0); elapsed < simulated; elapsed += step {
		clock.Advance(step)
		require.NoError(t, clock.BlockUntilContext(ctx, waiters))
	}
	n := hellos.Load()
	t.Logf("%d hellos to the draining server in %v of the client's clock", n, simulated)
	// 100 + 200 + 400 + 500 + … ms (±20 %): 8 in 3 s at most. The
	// reconnect backoff sent 34.
	assert.LessOrEqual(t, n, int64(9))
	assert.GreaterOrEqual(t, n, int64(6), "the endpoint keeps asking: the address may serve again")
}
