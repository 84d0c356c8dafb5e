package framework

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
)

// The end of a drain, connection by connection. HTTP/1.1 cannot tell a
// client which requests a closing connection carried: a call written into
// a keep-alive connection just as the server closes it fails with EOF, and
// the client cannot know whether it was read, so it cannot resend it.
// http.Server.Shutdown closes idle connections at once, so a client that
// had not yet heard of the drain (or had one connection back in its pool
// after hearing) lost such calls. Instead, the drain's second phase keeps
// every open connection serving until it has been idle for DrainQuiet: a
// call that arrives on one is read and refused as
// not processed (the server is draining), and its answer closes the
// connection. Only connections nobody used for DrainQuiet, with no request
// waiting unread in their socket, are closed; the listener stays open
// until then too, so connections in its backlog are accepted and answered
// rather than reset.

// connTracker knows each open connection's state and since when, for the
// drain's second phase.
type connTracker struct {
	clock clockwork.Clock

	mu      sync.Mutex
	conns   map[net.Conn]connState
	changed chan struct{} // closed and replaced on every change
}

type connState struct {
	state http.ConnState
	since time.Time
}

func newConnTracker(clock clockwork.Clock) *connTracker {
	return &connTracker{clock: clock, conns: map[net.Conn]connState{}, changed: make(chan struct{})}
}

// track is the http.Server's ConnState hook.
func (t *connTracker) track(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		// A hijacked connection is a watch stream: the topics' own drain
		// ends it.
		delete(t.conns, c)
	default:
		t.conns[c] = connState{state: st, since: t.clock.Now()}
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// quietFor returns how long to wait before every open connection has been
// idle (or new and unused) for quiet: 0 when they all have.
func (t *connTracker) quietFor(quiet time.Duration) (time.Duration, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	var wait time.Duration
	for c, cs := range t.conns {
		if cs.state == http.StateActive || unreadBytes(c) > 0 {
			// A request in progress, or one that arrived and waits to be
			// read (a loaded server may take a while to get to it).
			wait = max(wait, quiet)
			continue
		}
		if left := quiet - now.Sub(cs.since); left > wait {
			wait = left
		}
	}
	return wait, t.changed
}

// waitQuiet returns once every open connection has been idle for quiet, or
// when ctx ends.
func (t *connTracker) waitQuiet(ctx context.Context, quiet time.Duration) {
	for {
		wait, changed := t.quietFor(quiet)
		if wait <= 0 {
			return
		}
		timer := t.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-changed:
		case <-timer.Chan():
		}
		timer.Stop()
	}
}

// closeUnused closes the connections that never carried a request and
// have none waiting: http.Server.Shutdown waits five seconds before it
// counts such a connection as idle, and a client's pool holds them often
// (a connection dialled for a call that another connection carried
// first), above all over TLS, where dialling takes longer. They are no
// different from the idle connections Shutdown closes at once.
func (t *connTracker) closeUnused() {
	t.mu.Lock()
	var unused []net.Conn
	for c, cs := range t.conns {
		if cs.state == http.StateNew && unreadBytes(c) == 0 {
			unused = append(unused, c)
		}
	}
	t.mu.Unlock()
	for _, c := range unused {
		_ = c.Close()
	}
}

// unreadBytes returns how many bytes wait unread in c's socket, or 0 where
// that cannot be told.
func unreadBytes(c net.Conn) int {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n = pendingInput(fd) })
	return n
}
