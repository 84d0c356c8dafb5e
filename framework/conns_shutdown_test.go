package framework

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/protocol"

	"github.com/lockstep-dev/lockstep/framework/internal/conns"
)

// A connection accepted while the drain waits for the clients it refused
// to close theirs (a client that had not heard of the drain dialled it) is
// answered too, before http.Server.Shutdown begins. Once Shutdown has
// begun, the http.Server reads a request and closes its connection without
// an answer: a plain call written into such a connection failed with EOF,
// and its client could not know that it never ran.
func TestDrainAnswersAConnectionAcceptedDuringItsLinger(t *testing.T) {
	s, err := NewServer(ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: slog.New(slog.DiscardHandler),
		DrainTimeout: time.Millisecond, DrainQuiet: 20 * time.Millisecond})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		<-served
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		return c, bufio.NewReader(c)
	}
	get := func(c net.Conn) {
		_, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: lockstep\r\n\r\n")
		require.NoError(t, err)
	}

	// The first client's keep-alive connection, idle when the drain begins.
	first, firstR := dial()
	get(first)
	resp, err := http.ReadResponse(firstR, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	drained := make(chan error, 1)
	go func() { drained <- s.Shutdown(ctx) }()
	// The drain answers it with its refusal, and then waits for the
	// client to close it, which this one does not yet.
	resp, err = http.ReadResponse(firstR, nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)

	// Meanwhile a second client dials, and the server accepts.
	late, lateR := dial()
	s.mu.RLock()
	tracker := s.conns
	s.mu.RUnlock()
	require.Eventually(t, func() bool {
		return tracker.Open() == 2
	}, 10*time.Second, time.Millisecond, "the server accepted the late connection")
	require.NoError(t, first.Close())

	// The drain goes on to close the listener (it refuses connections),
	// which it does just before http.Server.Shutdown.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			return false
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	}, 10*time.Second, time.Millisecond, "the listener closed")

	// A call written into the late connection now is answered: the
	// drain's refusal, not processed, so its client resends it elsewhere.
	get(late)
	resp, err = http.ReadResponse(lateR, nil)
	require.NoError(t, err, "the late connection was closed unanswered")
	resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get(protocol.HeaderNotProcessed))
	require.Equal(t, "1", resp.Header.Get(protocol.HeaderDraining))
	require.NoError(t, late.Close())
	require.NoError(t, <-drained)
}

// A connection the kernel completed but the server had not yet accepted
// when its drain stopped accepting (its serving goroutine was busy
// elsewhere, as on a loaded machine) is accepted and answered, not reset
// by the listener's close. Closing a listener resets what is left in its
// accept queue, and a client that had written a call there read
// "connection reset by peer" after its call went out: a call it cannot
// know was never read, so a plain one could not be resent.
func TestDrainAcceptsWhatTheKernelQueuedBeforeClosingTheListener(t *testing.T) {
	s, err := NewServer(ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: slog.New(slog.DiscardHandler),
		DrainTimeout: time.Millisecond, DrainQuiet: 20 * time.Millisecond})
	require.NoError(t, err)
	tl, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	ln := &busyListener{TCPListener: tl, turns: make(chan struct{}), stopping: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		<-served
	})

	// The serving goroutine does not come back to Accept: a client's
	// connection is completed by the kernel and waits in the queue, with
	// a call written into it.
	c, err := net.Dial("tcp", tl.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, err = io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: lockstep\r\n\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return conns.AcceptQueueLen(tl) == 1 }, 10*time.Second, time.Millisecond,
		"the kernel queued the connection")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	drained := make(chan error, 1)
	go func() { drained <- s.Shutdown(ctx) }()
	// The drain stops accepting; only then does the serving goroutine
	// come back to Accept.
	select {
	case <-ln.stopping:
	case <-ctx.Done():
		t.Fatal("the drain never stopped accepting")
	}
	close(ln.turns)

	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "the queued connection was reset")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK { // read before the drain answered the connection
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get(protocol.HeaderNotProcessed))
	}
	require.NoError(t, c.Close())
	require.NoError(t, <-drained)
	require.NoError(t, <-served)
	served <- nil // for the cleanup
	_, err = net.Dial("tcp", tl.Addr().String())
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "the listener is closed")
}

// busyListener is a TCP listener whose Accept waits, before it accepts,
// until turns is closed: a serving goroutine that has not come back to
// Accept. stopping is closed when the listener is first closed or its
// deadline set, which is how a drain stops accepting.
type busyListener struct {
	*net.TCPListener
	turns, stopping chan struct{}
	once            sync.Once
}

func (l *busyListener) Accept() (net.Conn, error) {
	<-l.turns
	return l.TCPListener.Accept()
}

func (l *busyListener) Close() error {
	l.once.Do(func() { close(l.stopping) })
	return l.TCPListener.Close()
}

func (l *busyListener) SetDeadline(t time.Time) error {
	l.once.Do(func() { close(l.stopping) })
	return l.TCPListener.SetDeadline(t)
}
