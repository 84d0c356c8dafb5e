package framework_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// A client that has not heard of a drain still holds a keep-alive
// connection to the server. After the drain's first phase, a call written
// into that connection is read and refused as not processed (safe to
// resend elsewhere), not met by a connection closed under it, which would
// leave the client unable to tell whether the call was read.
func TestDrainKeepsIdleConnectionsServingUntilTheyAreQuiet(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		// The first phase ends at once; the second waits for connections
		// to be quiet for longer than the test takes.
		c.DrainTimeout, c.DrainQuiet = time.Millisecond, time.Minute
	})
	p := handshakeRaw(t, srv.URL, benchContract(t, "1.0.0"))
	tr := &http.Transport{}
	p.client = &http.Client{Transport: tr}
	status, _, _ := p.report(1, "")
	require.Equal(t, http.StatusOK, status)

	// The drain has begun once readiness fails; its first phase ends a
	// millisecond later, which is when Shutdown used to close idle
	// connections. Now the pooled connection keeps serving for DrainQuiet.
	drained := srv.startDrain(t, 10*time.Second)

	status, _, notProcessed := p.report(2, "")
	assert.Equal(t, http.StatusServiceUnavailable, status, "the call went out on the pooled connection and was read")
	assert.Equal(t, "1", notProcessed)
	assert.Equal(t, int64(1), srv.handled.Load())
	// The answer closed that connection; the drain ends once no open
	// connection is left.
	tr.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections() // the handshake's
	require.NoError(t, <-drained)
}

// A prober that asks faster than DrainQuiet (a status page refreshed, a
// monitor sampling /readyz) does not hold a drain open: during a drain
// every answer closes its connection, so no connection stays open for the
// second phase to wait on.
func TestDrainIsNotHeldOpenByAProberOnAKeepAliveConnection(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.DrainTimeout, c.DrainQuiet = time.Millisecond, 200*time.Millisecond
	})
	prober := &http.Client{Transport: &http.Transport{}}
	probe := func() (status int, closes bool, err error) {
		resp, err := prober.Get(srv.URL + "/readyz")
		if err != nil {
			return 0, false, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end, so the connection is kept
		return resp.StatusCode, resp.Close, nil
	}
	status, closes, err := probe()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.False(t, closes, "before the drain, connections are kept")

	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Server.Shutdown(ctx)
		drained <- errors.Join(err, ctx.Err())
	}()
	// Probe every few milliseconds (bounded) until the drain is over; on a
	// kept connection the second phase would wait out Shutdown's context.
	var sawClose bool
	for i := 0; i < 20000; i++ {
		select {
		case err := <-drained:
			require.NoError(t, err, "the drain ended by itself, not by its context")
			assert.True(t, sawClose, "answers during the drain said Connection: close")
			return
		case <-time.After(2 * time.Millisecond):
		}
		status, closes, err := probe()
		if err == nil && status == http.StatusServiceUnavailable {
			sawClose = sawClose || closes
		}
	}
	t.Fatal("the drain did not end while probed")
}

// A connection that never carried a request (a client's pool dials one
// for a call another connection then carried) does not hold a drain open:
// http.Server.Shutdown alone would wait five seconds before closing it.
// It gets the drain's refusal, then its end.
func TestDrainClosesConnectionsThatNeverCarriedARequest(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.DrainTimeout, c.DrainQuiet = time.Millisecond, 20*time.Millisecond
	})
	conn, err := net.Dial("tcp", srv.Addr)
	require.NoError(t, err)
	defer conn.Close()
	// The server has accepted it once it shows as a connection waiting;
	// a request on another connection proves the accept loop ran past it.
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()

	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		drained <- srv.Server.Shutdown(ctx)
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	requireDrainRefusal(t, br)
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the server closed the unused connection")
	conn.Close()
	require.NoError(t, <-drained, "the drain ended without waiting on the unused connection")
}

// A call that arrives on a keep-alive connection just as the drain ends
// it (here: its head is half written, read off the socket but not yet a
// request, when the drain's second phase begins) gets an answer: the
// drain's refusal, not processed, which a client resends elsewhere. The
// server does not serve the call when the rest of it arrives: no second
// answer follows, only the connection's end. Before, Shutdown closed the
// connection under the call, and the client got EOF and could not tell
// whether it had been read.
func TestDrainAnswersACallArrivingOnAConnectionItCloses(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.DrainTimeout, c.DrainQuiet = time.Millisecond, 20*time.Millisecond
	})
	p := handshakeRaw(t, srv.URL, benchContract(t, "1.0.0"))
	http.DefaultClient.CloseIdleConnections() // the handshake's
	conn, err := net.Dial("tcp", srv.Addr)
	require.NoError(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: lockstep\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close, "the connection is kept alive")

	body, err := json.Marshal(benchmsg.Node(1))
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: lockstep\r\n", protocol.CallPath("bench", "1.0.0", "ReportStatus"))
	require.NoError(t, err)

	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		drained <- srv.Server.Shutdown(ctx)
	}()
	requireDrainRefusal(t, br)

	// The rest of the call; the server may already have closed its side
	// for reading, so a failed write is no failure of the test.
	_, _ = fmt.Fprintf(conn, "%s: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		protocol.HeaderSession, p.session, len(body), body)
	rest, err := io.ReadAll(br)
	assert.Empty(t, rest, "no second answer: the call was not served (read error: %v)", err)
	conn.Close()
	require.NoError(t, <-drained)
	assert.Zero(t, srv.handled.Load())
}

// requireDrainRefusal reads the answer a draining server writes on a
// connection it closes: 408, closing the connection, unavailable, draining
// and not processed.
func requireDrainRefusal(t *testing.T, br *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "an answer, not the connection's end")
	defer resp.Body.Close()
	var wire struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&wire))
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.True(t, resp.Close, "Connection: close")
	assert.Equal(t, "1", resp.Header.Get(protocol.HeaderNotProcessed))
	assert.Equal(t, "1", resp.Header.Get(protocol.HeaderDraining))
	assert.Equal(t, string(framework.CodeUnavailable), wire.Code)
}

// A draining server keeps its listener open, accepting, while clients go
// on dialling it: a connection dialled after the drain answered its idle
// connections is answered too (a call on it refused as not processed),
// not reset in the listener's queue as the listener closes, which leaves
// its client unable to tell whether the call was read. The listener
// closes once the dials stop. The drain runs on a fake clock, so that
// however slowly a loaded machine dials, no quiet period passes between
// the dials: only the test moves the clock, before the dials and after.
func TestDrainKeepsAcceptingWhileClientsDialIt(t *testing.T) {
	clock := clockwork.NewFakeClock()
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.Clock = clock
		c.DrainTimeout, c.DrainQuiet = time.Millisecond, 300*time.Millisecond
	})
	p := handshakeRaw(t, srv.URL, benchContract(t, "1.0.0"))
	idle, err := net.Dial("tcp", srv.Addr)
	require.NoError(t, err)
	defer idle.Close()
	_ = idle.SetDeadline(time.Now().Add(20 * time.Second))
	idleR := bufio.NewReader(idle)
	_, err = io.WriteString(idle, "GET /livez HTTP/1.1\r\nHost: lockstep\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(idleR, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	drained := make(chan error, 1)
	go func() { drained <- srv.Server.Shutdown(context.Background()) }()

	// The drain's refusal on the idle keep-alive connection: it has
	// answered every connection between requests, which is when it used
	// to close the listener. The clock moves, a little at a time, until
	// the refusal is read. The drain then waits for this connection's
	// close before it begins to time the quiet between dials, so what the
	// clock moved past the refusal is not counted in that quiet.
	refused := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(idleR, nil)
		if err != nil {
			t.Errorf("no refusal on the idle connection: %v", err)
		}
		refused <- resp
	}()
	resp = advanceUntil(t, clock, 10*time.Millisecond, refused, "the drain never answered the idle connection")
	require.NotNil(t, resp, "no refusal on the idle connection")
	resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	idle.Close()

	// A client that has not heard dials again and again, a new connection
	// for each call. The clock stands still: however long the dials take,
	// the listener stays open for them.
	p.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 20 {
		status, _, notProcessed := p.report(i+2, "")
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.Equal(t, "1", notProcessed)
	}
	assert.Zero(t, srv.handled.Load())
	http.DefaultClient.CloseIdleConnections() // the handshake's
	select {
	case err := <-drained:
		t.Fatalf("the drain ended (%v) with no quiet after the dials", err)
	default:
	}

	// The dials stopped: once the clock passes the quiet, the listener
	// closes and the drain ends.
	require.NoError(t, advanceUntil(t, clock, 50*time.Millisecond, drained, "the drain never ended after the dials stopped"))
	_, err = net.Dial("tcp", srv.Addr)
	require.Error(t, err, "the listener is closed once the dials stopped")

	// A second Shutdown has nothing to drain: it returns at once, with
	// the clock standing still.
	again, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, srv.Server.Shutdown(again))
	require.NoError(t, again.Err(), "a second Shutdown waited out a drain")
}
