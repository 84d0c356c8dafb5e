package conns

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// A drain that has refused a keep-alive connection between requests keeps
// it open, reading, until its client closes it (for RefusalLinger at
// most), not just for DrainQuiet: a starved client may write a call
// before it reads the refusal, and closing the connection with that call
// unread resets it, which can discard the refusal before the client reads
// it (http.Server.Shutdown closes a connection between requests at once).
// Waiting is on the server's clock, so that the drain did not stop
// waiting is seen on a fake one.
func TestDrainWaitsForARefusedClientToClose(t *testing.T) {
	r := startLingerRig(t)
	clock, conn, ctx := r.clock, r.conn, r.ctx
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r.br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)

	// The client holds the connection open past DrainQuiet's default, as
	// long as the drain used to wait.
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(100 * time.Millisecond)
	waiting := make(chan error, 1)
	go func() { waiting <- clock.BlockUntilContext(ctx, 1) }()
	select {
	case <-r.refused:
		t.Fatal("the drain stopped waiting for the refused client after 100ms")
	case err := <-waiting:
		require.NoError(t, err, "the drain waits on")
	}

	// The client closes: the wait ends at once, long before RefusalLinger.
	require.NoError(t, conn.Close())
	select {
	case <-r.refused:
	case <-ctx.Done():
		t.Fatal("the drain went on waiting after its refused client closed")
	}
}

// A client that never closes holds the drain for RefusalLinger, no longer.
func TestDrainStopsWaitingForARefusedClientAfterTheLinger(t *testing.T) {
	r := startLingerRig(t)
	clock, ctx := r.clock, r.ctx
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(RefusalLinger)
	select {
	case <-r.refused:
	case <-ctx.Done():
		t.Fatal("the drain waited past RefusalLinger for a client that never closes")
	}
}

// Past the round's RefusalLinger, the end of the drain still waits for a
// refused client that has neither closed nor sent anything (a client
// starved longer, which may yet write a call into the connection), and
// ends as soon as it closes; waiting is on the server's clock.
func TestDrainEndWaitsForAStarvedRefusedClient(t *testing.T) {
	r := startLingerRig(t)
	clock, ctx := r.clock, r.ctx
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(RefusalLinger)
	<-r.refused

	ended := make(chan struct{})
	go func() {
		defer close(ended)
		r.tracker.waitRefusedClosed(ctx, 0)
	}()
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(RefusalLingerMax - time.Millisecond)
	waiting := make(chan error, 1)
	go func() { waiting <- clock.BlockUntilContext(ctx, 1) }()
	select {
	case <-ended:
		t.Fatal("the drain's end stopped waiting for the refused client before RefusalLingerMax")
	case err := <-waiting:
		require.NoError(t, err, "the drain's end waits on")
	}

	// The client reads its refusal and closes: the wait ends at once.
	_ = r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r.br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	require.NoError(t, r.conn.Close())
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the drain's end went on waiting after its refused client closed")
	}
}

// A refused client that never closes holds the end of the drain for
// RefusalLingerMax, no longer.
func TestDrainEndStopsWaitingAfterRefusalLingerMax(t *testing.T) {
	r := startLingerRig(t)
	clock, ctx := r.clock, r.ctx
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(RefusalLinger)
	<-r.refused
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		r.tracker.waitRefusedClosed(ctx, 0)
	}()
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(RefusalLingerMax)
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the drain's end waited past RefusalLingerMax for a client that never closes")
	}
}

// lingerRig is an HTTP server on 127.0.0.1 whose connections a tracker on
// a fake clock follows, with one keep-alive connection that has carried a
// request and waits between requests, and the drain's refuseIdle running
// on it; refused is closed once it returns.
type lingerRig struct {
	clock   *clockwork.FakeClock
	tracker *Tracker
	conn    net.Conn
	br      *bufio.Reader
	ctx     context.Context
	refused chan struct{}
}

func startLingerRig(t *testing.T) *lingerRig {
	t.Helper()
	r := &lingerRig{clock: clockwork.NewFakeClock(), refused: make(chan struct{})}
	tracker := NewTracker(r.clock)
	r.tracker = tracker
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			TrackedOf(r.Context()).Serve(r) // as Server.ServeHTTP claims it
		}),
		ConnState:   tracker.Track,
		ConnContext: tracker.ConnContext,
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		<-served
	})
	r.conn, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.conn.Close() })
	_ = r.conn.SetDeadline(time.Now().Add(20 * time.Second))
	_, err = io.WriteString(r.conn, "GET / HTTP/1.1\r\nHost: lockstep\r\n\r\n")
	require.NoError(t, err)
	r.br = bufio.NewReader(r.conn)
	resp, err := http.ReadResponse(r.br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Eventually(t, func() bool {
		tracker.mu.Lock()
		defer tracker.mu.Unlock()
		for _, tc := range tracker.conns {
			return tc.state == http.StateIdle
		}
		return false
	}, 10*time.Second, time.Millisecond, "the connection waits between requests")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r.ctx = ctx
	go func() {
		defer close(r.refused)
		tracker.refuseIdle(ctx, []byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
	}()
	return r
}
