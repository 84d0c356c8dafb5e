package framework_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// testSource is an endpoint source a test reports through, to every
// client running it; report returns once every client has taken the
// report in. With readiness it is a [framework.ReadinessSource].
type testSource struct {
	mu      sync.Mutex
	clients []func([]framework.EndpointReport)
	joined  chan struct{} // gets a value for each client that runs it
}

func newTestSource() *testSource { return &testSource{joined: make(chan struct{}, 64)} }

func (s *testSource) join(ctx context.Context, update func([]framework.EndpointReport)) {
	s.mu.Lock()
	s.clients = append(s.clients, update)
	s.mu.Unlock()
	s.joined <- struct{}{}
	<-ctx.Done()
}

// report tells every client that runs the source.
func (s *testSource) report(eps ...framework.EndpointReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, update := range s.clients {
		update(eps)
	}
}

// readinessSource is testSource with readiness.
type readinessSource struct{ *testSource }

func (s readinessSource) Run(ctx context.Context, update func([]string)) {
	panic("lockstep test: a client ran a ReadinessSource without its readiness")
}

func (s readinessSource) RunReadiness(ctx context.Context, update func([]framework.EndpointReport)) {
	s.join(ctx, update)
}

// plainSource is testSource without readiness: the URLs only.
type plainSource struct{ *testSource }

func (s plainSource) Run(ctx context.Context, update func([]string)) {
	s.join(ctx, func(eps []framework.EndpointReport) {
		urls := make([]string, len(eps))
		for i, e := range eps {
			urls[i] = e.URL
		}
		update(urls)
	})
}

// announceRig is clients of one source on a fake clock that never moves,
// with probers of their own, blocked calls to an address where nothing
// listens, waiting for its prober.
type announceRig struct {
	clock   *clockwork.FakeClock
	url     string
	addr    string
	dials   func(string) int64
	clients []*framework.Client
	done    chan error
}

func startAnnounceRig(t *testing.T, src framework.EndpointSource, s *testSource, clients int, eps ...framework.EndpointReport) *announceRig {
	t.Helper()
	r := &announceRig{clock: clockwork.NewFakeClock(), addr: freeLoopbackAddr(t), done: make(chan error, clients)}
	r.url = "http://" + r.addr
	ctx := timeout(t, 20*time.Second)
	for range clients {
		var dials func(string) int64
		cl := benchClient(t, "1.0.0", nil, func(c *framework.ClientConfig) {
			c.Source, c.Clock = src, r.clock
			dials = framework.UseOwnProbers(c, r.clock)
		})
		if r.dials == nil {
			r.dials = dials
		}
		r.clients = append(r.clients, cl)
		select {
		case <-s.joined:
		case <-ctx.Done():
			t.Fatal("the client did not run its source")
		}
	}
	if len(eps) == 0 {
		eps = []framework.EndpointReport{{URL: r.url, NotReady: true}}
	}
	s.report(eps...)
	for _, cl := range r.clients {
		endpointStateEventually(t, cl, r.url, "unreachable")
		go func() {
			_, err := report(ctx, cl, 1)
			r.done <- err
		}()
		require.Eventually(t, func() bool { return cl.Status().Blocked == 1 }, 10*time.Second, time.Millisecond,
			"the call blocks")
	}
	// Every client's endpoint waits for the prober of the address, whose
	// next dial is planned on the fake clock: nothing else dials.
	require.NoError(t, r.clock.BlockUntilContext(ctx, len(r.clients)))
	return r
}

// calls waits for every blocked call to succeed, without moving the clock.
func (r *announceRig) calls(t *testing.T) {
	t.Helper()
	for range r.clients {
		select {
		case err := <-r.done:
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Fatalf("a blocked call did not go through while the clock stood still: %+v", r.clients[0].Endpoints())
		}
	}
}

// A readiness source that says a known endpoint is ready again announces
// its server: the prober of the address dials at once, not at its next
// planned dial, and that one dial wakes every client of the process
// waiting there, so their blocked calls go through. On a fake clock that
// never moves, so no planned dial (the first is 13 ms on) can be what
// found the server, against a real server on 127.0.0.1. Reports that
// change nothing (not ready again) announce nothing.
func TestAReadyAgainReportWakesTheProberAndTheBlockedCallsWithOneDial(t *testing.T) {
	s := newTestSource()
	r := startAnnounceRig(t, readinessSource{s}, s, 3)
	require.Zero(t, r.dials(r.url), "the prober dialled before its first planned dial")
	start := r.clock.Now()

	startBench(t, r.addr, "1.0.0")
	s.report(framework.EndpointReport{URL: r.url, NotReady: true}) // not ready again: no announcement
	s.report(framework.EndpointReport{URL: r.url})
	r.calls(t)
	assert.Equal(t, start, r.clock.Now())
	assert.Equal(t, int64(1), r.dials(r.url), "the announcement cost one dial for every client")
	for _, cl := range r.clients {
		assert.Equal(t, "ready", endpointState(cl, r.url))
	}
}

// Without readiness, what a source can say is that an endpoint went away
// and came back: the client drops the endpoint and starts a new one, whose
// first handshake is at once (each client dials for itself, not through
// the prober).
func TestAnEndpointReportedAfterItsRemovalIsHandshakenAtOnce(t *testing.T) {
	s := newTestSource()
	r := startAnnounceRig(t, plainSource{s}, s, 2)
	start := r.clock.Now()

	startBench(t, r.addr, "1.0.0")
	s.report()
	s.report(framework.EndpointReport{URL: r.url})
	r.calls(t)
	assert.Equal(t, start, r.clock.Now())
	assert.Zero(t, r.dials(r.url), "the prober dialled")
}

// An endpoint waiting out a backoff (its address answered, but not with a
// welcome: a proxy in front of the server said 503 while it started) tries
// again at once when its source says it is ready again, not when the
// backoff's timer fires. The clock never moves; proxy and server are real,
// on 127.0.0.1.
func TestAReadyAgainReportEndsAnEndpointsBackoff(t *testing.T) {
	backend := startBench(t, "127.0.0.1:0", "1.0.0")
	target, err := url.Parse(backend.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	toBackend := &http.Transport{}
	proxy.Transport = toBackend
	var up atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { front.Close(); toBackend.CloseIdleConnections() })

	clock := clockwork.NewFakeClock()
	start := clock.Now()
	cl, s, ctx := readinessClientOnClock(t, clock)
	s.report(framework.EndpointReport{URL: front.URL, NotReady: true})
	endpointStateEventually(t, cl, front.URL, "refused")
	done := make(chan error, 1)
	go func() {
		_, err := report(ctx, cl, 1)
		done <- err
	}()
	require.Eventually(t, func() bool { return cl.Status().Blocked == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "the endpoint waits out its backoff")

	up.Store(true)
	s.report(framework.EndpointReport{URL: front.URL})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatalf("the blocked call did not go through while the clock stood still: %+v", cl.Endpoints())
	}
	assert.Equal(t, start, clock.Now())
	assert.Equal(t, int64(1), backend.handled.Load())
}

// readinessClientOnClock is a client whose only endpoints come from a
// test source, with its clock and probers on clock, once it runs the
// source; ctx bounds the test.
func readinessClientOnClock(t *testing.T, clock *clockwork.FakeClock) (*framework.Client, *testSource, context.Context) {
	t.Helper()
	s := newTestSource()
	cl := benchClient(t, "1.0.0", nil, func(c *framework.ClientConfig) {
		c.Source, c.Clock = readinessSource{s}, clock
		framework.UseOwnProbers(c, clock)
	})
	ctx := timeout(t, 20*time.Second)
	select {
	case <-s.joined:
	case <-ctx.Done():
		t.Fatal("the client did not run its source")
	}
	return cl, s, ctx
}
