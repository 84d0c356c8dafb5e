package framework_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
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

// drainingFront refuses every hello as a draining server does until up is
// set, then passes requests to backend: a server at one address drained
// and replaced.
func drainingFront(t *testing.T, backend string) (url string, up *atomic.Bool, hellos *atomic.Int64) {
	t.Helper()
	draining, hellos := drainingHellos(t)
	target, err := neturl.Parse(backend)
	require.NoError(t, err)
	toBackend := &http.Transport{}
	replacement := httputil.NewSingleHostReverseProxy(target)
	replacement.Transport = toBackend
	dTarget, err := neturl.Parse(draining)
	require.NoError(t, err)
	toDraining := &http.Transport{}
	old := httputil.NewSingleHostReverseProxy(dTarget)
	old.Transport = toDraining
	up = new(atomic.Bool)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if up.Load() {
			replacement.ServeHTTP(w, r)
			return
		}
		old.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { front.Close(); toBackend.CloseIdleConnections(); toDraining.CloseIdleConnections() })
	return front.URL, up, hellos
}

// A readiness source saying the endpoint is ready again ends the wait
// between hellos to a draining server at once: the blocked call goes
// through on a clock that never moves.
func TestAReadyAgainReportEndsTheDrainingPace(t *testing.T) {
	backend := startBench(t, "127.0.0.1:0", "1.0.0")
	front, up, hellos := drainingFront(t, backend.URL)
	clock := clockwork.NewFakeClock()
	start := clock.Now()
	cl, s, ctx := readinessClientOnClock(t, clock)
	s.report(framework.EndpointReport{URL: front, NotReady: true})
	endpointStateEventually(t, cl, front, "draining")
	done := make(chan error, 1)
	go func() {
		_, err := report(ctx, cl, 1)
		done <- err
	}()
	require.Eventually(t, func() bool { return cl.Status().Blocked == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "the endpoint waits out its draining pace")
	require.Equal(t, int64(1), hellos.Load())

	up.Store(true)
	s.report(framework.EndpointReport{URL: front})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatalf("the blocked call did not go through while the clock stood still: %+v", cl.Endpoints())
	}
	assert.Equal(t, start, clock.Now())
	assert.Equal(t, int64(1), backend.handled.Load())
}

// Without a readiness source, the replacement is found by the next paced
// hello: within the pace's cap of the client's clock, however long the
// drain went on.
func TestAReplacementAfterADrainIsFoundWithinTheDrainingPace(t *testing.T) {
	backend := startBench(t, "127.0.0.1:0", "1.0.0")
	front, up, hellos := drainingFront(t, backend.URL)
	clock := clockwork.NewFakeClock()
	cl := benchClient(t, "1.0.0", []string{front}, func(c *framework.ClientConfig) { c.Clock = clock })
	ctx := timeout(t, 20*time.Second)
	// Six refusals in a row: the pace is at its cap.
	for hellos.Load() < 6 {
		require.NoError(t, clock.BlockUntilContext(ctx, 1))
		clock.Advance(10 * time.Millisecond)
	}
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	up.Store(true)
	clock.Advance(600 * time.Millisecond) // 500 ms + 20 % jitter
	endpointStateEventually(t, cl, front, "ready")
	_, err := report(ctx, cl, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), backend.handled.Load())
}
