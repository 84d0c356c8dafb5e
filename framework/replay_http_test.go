package framework_test

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// losingTransport carries every request, but loses the answers of the
// first lose calls to methods: the server ran them, and the client sees a
// connection that broke before the answer came.
type losingTransport struct {
	inner    http.RoundTripper
	lose     atomic.Int64
	mu       sync.Mutex
	replayed []string // Lockstep-Replayed of each call's answer, in order
}

var errAnswerLost = errors.New("connection reset after the request was sent")

func (t *losingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.inner.RoundTrip(r)
	if err != nil || !(strings.HasSuffix(r.URL.Path, "/ReportStatus") || strings.HasSuffix(r.URL.Path, "/"+protocol.MultiCallMethod)) {
		return resp, err
	}
	t.mu.Lock()
	t.replayed = append(t.replayed, resp.Header.Get(protocol.HeaderReplayed))
	t.mu.Unlock()
	if t.lose.Add(-1) >= 0 {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, errAnswerLost
	}
	return resp, nil
}

func (t *losingTransport) CloseIdleConnections() {
	if ci, ok := t.inner.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// countingTransport counts the calls to methods it starts carrying.
type countingTransport struct {
	inner http.RoundTripper
	calls atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/ReportStatus") {
		t.calls.Add(1)
	}
	return t.inner.RoundTrip(r)
}

func (t *countingTransport) CloseIdleConnections() {
	if ci, ok := t.inner.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// A keyed call whose answer is lost after its handler ran is resent to the
// same server, which answers from its record: the handler ran once, and
// the caller gets the first answer.
func TestKeyedCallWhoseAnswerIsLostIsAnsweredFromTheRecord(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	tr := &losingTransport{inner: framework.NewTransport(nil)}
	tr.lose.Store(1)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Transport = tr })

	ack, err := report(timeout(t, 10*time.Second), cl, 1, framework.WithIdempotencyKey("report-1"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), ack.Generation, "the caller gets the first run's answer")
	assert.Equal(t, int64(1), srv.handled.Load(), "the handler ran once")
	tr.mu.Lock()
	assert.Equal(t, []string{"", "1"}, tr.replayed, "the resend was answered from the record")
	tr.mu.Unlock()

	// Another key runs the handler again.
	ack, err = report(timeout(t, 10*time.Second), cl, 1, framework.WithIdempotencyKey("report-2"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), ack.Generation)
}

// Without a key, the same lost answer is returned to the caller: the call
// is not idempotent, and resending it could apply it twice.
func TestUnkeyedCallWhoseAnswerIsLostFails(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	tr := &losingTransport{inner: framework.NewTransport(nil)}
	tr.lose.Store(1)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Transport = tr })

	_, err := report(timeout(t, 10*time.Second), cl, 1)
	require.Error(t, err)
	assert.Equal(t, int64(1), srv.handled.Load())
}

// A key names one request: reused for another, it is refused, and the
// handler does not run.
func TestIdempotencyKeyReusedForAnotherRequestIsInvalid(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	_, err := report(timeout(t, 10*time.Second), cl, 1, framework.WithIdempotencyKey("k"))
	require.NoError(t, err)
	_, err = report(timeout(t, 10*time.Second), cl, 2, framework.WithIdempotencyKey("k"))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err))
	assert.Contains(t, err.Error(), `idempotency key "k" was used for another request`)
	assert.Equal(t, int64(1), srv.handled.Load())
}

// A replay that arrives while the first call with its key still runs
// waits for that call's answer instead of running the handler again.
func TestReplayWhileTheFirstRunsWaitsForItsAnswer(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	srv.hold = make(chan struct{})
	tr := &countingTransport{inner: framework.NewTransport(nil)}
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Transport = tr })

	type result struct {
		ack *benchmsg.Ack
		err error
	}
	results := make(chan result, 2)
	call := func() {
		ack, err := report(timeout(t, 10*time.Second), cl, 1, framework.WithIdempotencyKey("same"))
		results <- result{ack, err}
	}
	go call()
	require.Eventually(t, func() bool { return srv.entered.Load() == 1 }, 5*time.Second, time.Millisecond)
	go call()
	// The second call is on its way while the first is held in its
	// handler; whenever it arrives, it must not run the handler again.
	require.Eventually(t, func() bool { return tr.calls.Load() == 2 }, 5*time.Second, time.Millisecond)
	close(srv.hold)
	for range 2 {
		r := <-results
		require.NoError(t, r.err)
		assert.Equal(t, int64(1), r.ack.Generation)
	}
	assert.Equal(t, int64(1), srv.handled.Load())
}

// Automatically batched calls carry their keys one per call: a multi-call
// whose answer is lost is resent, and each keyed call in it is answered
// from its own record.
func TestAutoBatchedKeyedCallsAreAnsweredFromTheirRecords(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	tr := &losingTransport{inner: framework.NewTransport(nil)}
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport = tr
		c.AutoBatch = &framework.AutoBatch{MaxCalls: 8, MaxDelay: 50 * time.Millisecond}
	})
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)))
	tr.lose.Store(1)

	const calls = 8
	var wg sync.WaitGroup
	errs := make([]error, calls)
	gens := make([]int64, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack, err := report(timeout(t, 10*time.Second), cl, i, framework.WithIdempotencyKey("batched-"+strconv.Itoa(i)))
			errs[i] = err
			if err == nil {
				gens[i] = ack.Generation
			}
		}()
	}
	wg.Wait()
	for i := range calls {
		require.NoError(t, errs[i], "call %d", i)
	}
	require.Less(t, tr.lose.Load(), int64(0), "no answer was lost")
	assert.Equal(t, int64(calls), srv.handled.Load(), "each keyed call ran once")
	slices.Sort(gens)
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8}, gens, "every caller got its own first answer")
}
