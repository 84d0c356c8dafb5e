package framework_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	// onLose, if set, runs when an answer is lost, before the client hears.
	onLose func()
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
		if t.onLose != nil {
			t.onLose()
		}
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

// rawPeer speaks the protocol by hand, so a test can time each request.
type rawPeer struct {
	t       *testing.T
	base    string
	session string
	client  *http.Client // default http.DefaultClient
}

// handshakeRaw opens a session by hand; it is closed when the test ends.
func handshakeRaw(t *testing.T, base string, c *framework.Contract) *rawPeer {
	t.Helper()
	hello := fmt.Sprintf(`{"contract":%q,"component":"kubelet","instance":"raw-1","release":"1.31.0","offers":[{"version":%q,"fingerprint":%q}]}`,
		c.Name(), c.Version(), c.Fingerprint())
	resp, err := http.Post(base+protocol.PathHandshake, protocol.ContentTypeJSON, strings.NewReader(hello))
	require.NoError(t, err)
	defer resp.Body.Close()
	var welcome struct {
		Session string `json:"session"`
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&welcome))
	t.Cleanup(func() { closeRawSession(base, welcome.Session) }) // see rawHandshake
	return &rawPeer{t: t, base: base, session: welcome.Session}
}

// report posts ReportStatus for node n with key, and returns the status,
// the Lockstep-Replayed and Lockstep-Not-Processed headers.
func (p *rawPeer) report(n int, key string) (status int, replayed, notProcessed string) {
	p.t.Helper()
	body, err := json.Marshal(benchmsg.Node(n))
	require.NoError(p.t, err)
	req, err := http.NewRequest(http.MethodPost, p.base+protocol.CallPath("bench", "1.0.0", "ReportStatus"), bytes.NewReader(body))
	require.NoError(p.t, err)
	req.Header.Set(protocol.HeaderSession, p.session)
	if key != "" {
		req.Header.Set(protocol.HeaderIdempotencyKey, key)
	}
	client := p.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get(protocol.HeaderReplayed), resp.Header.Get(protocol.HeaderNotProcessed)
}

// A draining server still answers replays of the keys it recorded: were
// it to refuse them as not processed, the client would resend them to
// another replica, and a call applied here would be applied twice. New
// keys are refused as usual.
func TestDrainingServerAnswersReplaysOfItsRecords(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) { c.DrainTimeout = 10 * time.Second })
	p := handshakeRaw(t, srv.URL, benchContract(t, "1.0.0"))
	status, replayed, _ := p.report(1, "applied-before-drain")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, replayed)

	drained := srv.startDrain(t, 5*time.Second)

	status, replayed, notProcessed := p.report(1, "applied-before-drain")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "1", replayed)
	assert.Empty(t, notProcessed)
	status, _, notProcessed = p.report(2, "new-during-drain")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "1", notProcessed)
	assert.Equal(t, int64(1), srv.handled.Load())

	// Closing the session ends the drain.
	req, err := http.NewRequest(http.MethodDelete, srv.URL+protocol.PathSession, nil)
	require.NoError(t, err)
	req.Header.Set(protocol.HeaderSession, p.session)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, <-drained)
}

// Under ExactlyOnce every non-idempotent call gets a key of its own: a
// lost answer is resent and answered from the record, without the caller
// naming a key.
func TestExactlyOnceKeysEveryNonIdempotentCall(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	tr := &losingTransport{inner: framework.NewTransport(nil)}
	tr.lose.Store(1)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport, c.ExactlyOnce = tr, true
	})
	ack, err := report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), ack.Generation)
	assert.Equal(t, int64(1), srv.handled.Load())
	tr.mu.Lock()
	assert.Equal(t, []string{"", "1"}, tr.replayed)
	tr.mu.Unlock()
}

// A keyed call whose answer was lost may have been applied by the instance
// that ran it. When that instance is gone (replaced at the same address),
// the call is not resent to the new one, which holds no record: it fails
// with unknown.
func TestKeyedCallWhoseInstanceIsGoneFailsWithUnknown(t *testing.T) {
	old := startBench(t, "127.0.0.1:0", "1.0.0")
	tr := &losingTransport{inner: framework.NewTransport(nil)}
	tr.lose.Store(1)
	var replacement *benchServer
	tr.onLose = func() {
		// The old instance ran the call; it dies before the client learns
		// that the answer was lost, and a new one takes its address.
		require.NoError(t, old.Kill())
		replacement = startBench(t, old.Addr, "1.0.0")
	}
	cl := benchClient(t, "1.0.0", []string{old.URL}, func(c *framework.ClientConfig) { c.Transport = tr })

	_, err := report(timeout(t, 20*time.Second), cl, 1, framework.WithIdempotencyKey("k"))
	require.Error(t, err)
	assert.Equal(t, framework.CodeUnknown, framework.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "outcome unknown")
	assert.Equal(t, int64(1), old.handled.Load())
	assert.Zero(t, replacement.handled.Load(), "the new instance ran a call the old one may have applied")

	// The client itself is fine: the next call goes to the new instance.
	_, err = report(timeout(t, 20*time.Second), cl, 2, framework.WithIdempotencyKey("k2"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), replacement.handled.Load())
}

// A pinned peer keeps no idempotency records, so a keyed call whose answer
// it lost is not resent to it (it would run again): the call fails with
// unknown, and the peer ran it once.
func TestKeyedCallToAPinnedPeerIsNotResentAfterALostAnswer(t *testing.T) {
	var applied atomic.Int64
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := applied.Add(1)
		if n == 1 {
			// Applied, and the answer lost: the connection is cut.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		_, _ = fmt.Fprintf(w, `{"accepted":true,"generation":%d}`, n)
	}))
	t.Cleanup(ext.Close)
	cl := benchClient(t, "1.0.0", nil, func(c *framework.ClientConfig) {
		c.Pinned = []framework.PinnedPeer{{URL: ext.URL, Version: "1.0.0"}}
	})

	_, err := report(timeout(t, 10*time.Second), cl, 1, framework.WithIdempotencyKey("k"))
	require.Error(t, err)
	assert.Equal(t, framework.CodeUnknown, framework.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "keeps no idempotency records")
	assert.Equal(t, int64(1), applied.Load(), "the keyed call was resent to a peer that keeps no record of it")

	// A call without a key fails as before, and is not resent either.
	_, err = report(timeout(t, 10*time.Second), cl, 2)
	require.NoError(t, err, "the peer answers the next call")
}

// The refusal a draining server writes on an idle connection says nothing
// of a key: a keyed call whose answer was lost, and whose resend is
// written into a connection the drain has claimed, stays pinned to the
// instance that may have applied it. It fails with unknown once that
// instance is gone; it is not sent to another server, which would apply it
// a second time.
func TestKeyedResendRefusedOnADrainedConnectionStaysPinned(t *testing.T) {
	// A slow heartbeat, so the client hears of the drain from the refusal.
	old := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.Heartbeat, c.SessionTTL, c.DrainTimeout = 5*time.Second, 20*time.Second, 300*time.Millisecond
	})
	other := startBench(t, "127.0.0.1:0", "1.0.0")
	// A connection to old, open before its drain and unused: the drain
	// writes its refusal there.
	raw, err := net.Dial("tcp", old.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	src := movingSource{urls: make(chan []string, 2)}
	src.urls <- []string{old.URL}
	drained := make(chan error, 1)
	tr := &losingTransport{inner: &claimedConnTransport{inner: framework.NewTransport(nil), conn: raw, nth: 2}}
	tr.lose.Store(1)
	tr.onLose = func() {
		// old applied the call; its answer is lost, and old begins to
		// drain, while another server comes up.
		go func() { drained <- old.Server.Shutdown(context.Background()) }()
		src.urls <- []string{old.URL, other.URL}
	}
	cl := benchClient(t, "1.0.0", nil, func(c *framework.ClientConfig) {
		c.Transport, c.Source = tr, src
		c.AutoBatch = &framework.AutoBatch{Disabled: true}
	})

	_, err = report(timeout(t, 20*time.Second), cl, 1, framework.WithIdempotencyKey("k"))
	applied := old.handled.Load() + other.handled.Load()
	require.Equal(t, int64(1), applied, "the keyed call was applied %d times (old %d, other %d); err %v",
		applied, old.handled.Load(), other.handled.Load(), err)
	require.Error(t, err)
	assert.Equal(t, framework.CodeUnknown, framework.CodeOf(err), "%v", err)
	require.NoError(t, <-drained)
}

// movingSource reports the endpoint sets sent on urls, in turn.
type movingSource struct{ urls chan []string }

func (s movingSource) Run(ctx context.Context, update func([]string)) {
	for {
		select {
		case u := <-s.urls:
			update(u)
		case <-ctx.Done():
			return
		}
	}
}

// claimedConnTransport carries every request, except the nth call to
// ReportStatus: that one it writes into conn once the server has written
// something there unasked (a draining server's refusal), and returns what
// the server answered on conn.
type claimedConnTransport struct {
	inner http.RoundTripper
	conn  net.Conn
	nth   int64
	n     atomic.Int64
}

func (t *claimedConnTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/ReportStatus") || t.n.Add(1) != t.nth {
		return t.inner.RoundTrip(r)
	}
	br := bufio.NewReader(t.conn)
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	if err := r.Write(t.conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(br, r)
}

func (t *claimedConnTransport) CloseIdleConnections() {
	if ci, ok := t.inner.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
