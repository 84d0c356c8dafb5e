// Package conns tracks a server's connections for its drain: it knows
// which connection is between requests, answers the ones a request may be
// arriving on with a refusal instead of closing them under it, and stops
// the listener once clients have stopped dialling. The server (package
// framework) is its one user; nothing here knows of contracts or calls.
package conns

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
)

// The end of a drain, connection by connection. HTTP/1.1 cannot tell a
// client that a keep-alive connection is about to close: a call written
// into one just as the server closes it fails with EOF or a reset, and
// the client cannot know whether it was read, so it cannot resend it.
// http.Server.Shutdown closes idle connections at once (and a connection
// whose next request has been read off the socket but not yet parsed
// counts as idle), so a client that had not yet heard of the drain, or
// had a connection back in its pool after hearing, lost such calls.
//
// So a draining server never closes a connection a request may be
// arriving on without answering that request. Every answer it gives
// during a drain closes its connection (Connection: close). The drain's
// second phase keeps the listener and every open connection that has
// carried a request serving until each has been idle for DrainQuiet (a
// connection that has carried none is not waited for); then, on each
// HTTP/1 connection that is idle or never carried a request, it writes
// unasked the answer a request arriving there would get: 408 Request
// Timeout with Connection: close, Lockstep-Draining and
// Lockstep-Not-Processed, the signal RFC 9110 (15.5.9) gives for a server
// closing an idle connection ("if the client has an outstanding request
// in transit, it MAY repeat that request"). A client with no request on the connection drops it
// (Go's transport does so silently for a 408); a client whose request was
// in transit reads the refusal as its answer and resends elsewhere; the
// server never runs a request that arrives on a connection so answered.
// HTTP/2 connections are left to http.Server.Shutdown, whose GOAWAY tells
// the client which streams were not processed.
//
// http.Server.Shutdown itself must find no HTTP/1 connection a request
// may still arrive on unanswered: once it has begun, the server reads a
// request and closes its connection without an answer (the client sees
// EOF after its call was sent, the very failure it cannot resend), and it
// closes unanswered a connection that has waited five seconds for its
// first request. So before Shutdown the drain stops accepting (the
// listener is closed beneath the http.Server, see GatedListener) and
// answers, with the same refusal, every connection accepted since it
// last did.

// Tracker knows each open connection's state and since when, for the
// drain's second phase.
type Tracker struct {
	clock clockwork.Clock
	// refusals counts the goroutines that refuse a TLS connection once
	// its handshake is done (see refuseIdle); each ends when the
	// handshake does, or fails, and the connection is closed.
	refusals sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]*Conn
	changed chan struct{} // closed and replaced on every change
	// accepted is when the last connection was accepted, closed since or
	// not: a drain closes the listener once clients have stopped dialling.
	accepted time.Time
	// acceptedN counts the connections accepted, so a drain knows whether
	// any came since it last refused (a fake clock's times can be equal).
	acceptedN uint64
	// unusedRefused is when the drain last wrote its refusal on a
	// connection that had carried no request (see closeUnused).
	unusedRefused time.Time
}

// Conn is one open connection. Who answers next on it, the server
// (a request began) or the drain (its refusal, written unasked), is
// decided once, by next; state and since are under Tracker.mu.
type Conn struct {
	conn  net.Conn
	state http.ConnState
	since time.Time
	next  atomic.Int32 // connFree, connServing or connRefused
	h2    atomic.Bool  // it speaks HTTP/2: never written to here
	// refusing is set once the drain has begun to refuse it, so that a
	// refusal waiting for its TLS handshake is not begun twice.
	refusing atomic.Bool
	// refusalWritten is closed once the drain's refusal has been written
	// (or failed to be), for a request that arrives meanwhile to wait on.
	refusalWritten chan struct{}
	// lingers is set once the drain's refusal has been written on it after
	// it carried a request: the drain does not end before its client has
	// closed it (see RefusedClosed).
	lingers atomic.Bool
}

const (
	connFree    int32 = iota // between requests
	connServing              // a request is being answered
	connRefused              // the drain's refusal was written; nothing more is served
)

type trackedConnKey struct{}

// NewTracker returns a Tracker that knows no connection yet and takes the
// time of each state change from clock (a test's fake clock, or the real
// one).
func NewTracker(clock clockwork.Clock) *Tracker {
	return &Tracker{clock: clock, conns: map[net.Conn]*Conn{}, changed: make(chan struct{})}
}

// connContext is the http.Server's ConnContext hook: it registers the
// connection, so that its requests can find it ([TrackedOf]).
func (t *Tracker) ConnContext(ctx context.Context, c net.Conn) context.Context {
	tc := &Conn{conn: c, state: http.StateNew, since: t.clock.Now(), refusalWritten: make(chan struct{})}
	t.mu.Lock()
	t.conns[c] = tc
	t.accepted = tc.since
	t.acceptedN++
	t.mu.Unlock()
	return context.WithValue(ctx, trackedConnKey{}, tc)
}

// TrackedOf returns the connection a request arrived on, nil when the
// server is not serving through [Server.Serve].
func TrackedOf(ctx context.Context) *Conn {
	tc, _ := ctx.Value(trackedConnKey{}).(*Conn)
	return tc
}

// track is the http.Server's ConnState hook.
func (t *Tracker) Track(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tc := t.conns[c]
	switch {
	case st == http.StateClosed || st == http.StateHijacked:
		// A hijacked connection is a watch stream: the topics' own drain
		// ends it.
		delete(t.conns, c)
	case tc == nil:
		return
	case st == http.StateIdle:
		// An HTTP/1 request is served between its Active and this Idle,
		// and its answer has been written whole. A connection that went
		// active and idle again without one is HTTP/2 (without TLS: its
		// preface read as a request line), which is never written to.
		if !tc.next.CompareAndSwap(connServing, connFree) && tc.state == http.StateActive {
			tc.h2.Store(true)
		}
		fallthrough
	default:
		tc.state, tc.since = st, t.clock.Now()
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// serve claims the connection for a request's answer; false means the
// drain has answered it already, so the request must not be served.
func (tc *Conn) Serve(r *http.Request) bool {
	if r.ProtoMajor >= 2 {
		// Never refused, unless the refusal won a race it should not
		// have (see refuse): then its HTTP/1 bytes broke the connection,
		// and nothing on it may run.
		tc.h2.Store(true)
		return tc.next.Load() != connRefused
	}
	return tc.next.CompareAndSwap(connFree, connServing)
}

// quietFor returns how long to wait before every open connection that has
// carried a request has been idle for quiet: 0 when they all have. A
// connection that has carried none (StateNew, even with a request waiting
// unread in it) is not waited for: the drain's refusal answers whatever
// comes on it, and waiting for it to be unused for quiet let a client
// that dialled again and again (or one that never finished its TLS
// handshake) hold the drain for as long as it liked.
func (t *Tracker) quietFor(quiet time.Duration) (time.Duration, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	var wait time.Duration
	for c, tc := range t.conns {
		if tc.state == http.StateNew {
			continue
		}
		if tc.state == http.StateActive || unreadBytes(c) > 0 {
			// A request in progress, or one that arrived and waits to be
			// read (a loaded server may take a while to get to it).
			wait = max(wait, quiet)
			continue
		}
		if left := quiet - now.Sub(tc.since); left > wait {
			wait = left
		}
	}
	return wait, t.changed
}

// waitQuiet returns once every open connection has been idle for quiet, or
// when ctx ends.
func (t *Tracker) waitQuiet(ctx context.Context, quiet time.Duration) {
	t.waitUntil(ctx, func() time.Duration {
		wait, _ := t.quietFor(quiet)
		return wait
	})
}

// waitUntil waits until left returns 0 or less, looking again whenever a
// connection changes state or the time left has passed; or until ctx ends.
func (t *Tracker) waitUntil(ctx context.Context, left func() time.Duration) {
	for {
		t.mu.Lock()
		changed := t.changed
		t.mu.Unlock()
		wait := left()
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

// Drain is what a drain of the connections needs to know.
type Drain struct {
	// Refusal is a complete HTTP/1.1 answer that closes its connection,
	// written on connections a request may be arriving on.
	Refusal []byte
	// Quiet is how long every connection that has carried a request must
	// have been idle before the refusals begin.
	Quiet time.Duration
	// DialQuiet is how long no connection must have been accepted before
	// the listener is stopped; Bound bounds that wait.
	DialQuiet, Bound time.Duration
	// StopAccepting returns once no connection can be accepted any more.
	StopAccepting func(context.Context)
	// Linger bounds how long the drain's end waits for the clients of
	// the connections it refused after they carried a request to close
	// them (waitRefusedClosed); 0 means RefusalLingerMax.
	Linger time.Duration
}

// Drain is the drain's second phase on the connections: it waits until
// every open connection that has carried a request has been idle for
// d.Quiet, answers those between requests or unused with d.Refusal (see
// refuseIdle), and then keeps the listener open, accepting, until no
// connection has been accepted for d.DialQuiet (or d.Bound has passed), answering what the late dialers open. Closing a
// listener resets the connections still in its queue, which clients that
// had not heard of the drain dialled moments before: a call written into
// one fails as if cut after it was sent, and its client cannot know that
// it never ran. A connection accepted during the drain is answered
// instead: its calls by the draining refusal (not processed, Connection:
// close), or, left unused, by refusal. Clients that have heard stop
// dialling, so the wait is short. Then it calls d.StopAccepting, which
// returns once no connection can be accepted any more, and answers the
// connections accepted since the last refusal (during its linger, say),
// so that none is left for http.Server.Shutdown to close unanswered, and
// closes those that never carried a request (closeUnused). It waits for
// nothing on a connection on which no request's headers have arrived:
// such connections, opened again and again, held it for as long as their
// client liked.
func (t *Tracker) Drain(ctx context.Context, d Drain) {
	refusal, dialQuiet := d.Refusal, d.DialQuiet
	t.waitQuiet(ctx, d.Quiet)
	seen := t.refuseIdle(ctx, refusal)
	end := t.clock.Now().Add(d.Bound)
	for ctx.Err() == nil {
		mark := t.clock.Now()
		t.waitUntil(ctx, func() time.Duration {
			t.mu.Lock()
			defer t.mu.Unlock()
			now := t.clock.Now()
			last := mark
			if t.accepted.After(last) {
				last = t.accepted
			}
			return min(dialQuiet-now.Sub(last), end.Sub(now))
		})
		t.mu.Lock()
		dialled := t.acceptedN != seen
		t.mu.Unlock()
		if !dialled || !t.clock.Now().Before(end) {
			break
		}
		seen = t.refuseIdle(ctx, refusal)
	}
	if ctx.Err() != nil {
		return
	}
	d.StopAccepting(ctx)
	t.refuseIdle(ctx, refusal)
	t.closeUnused(ctx)
	t.waitRefusedClosed(ctx, d.Linger)
}

// RefusalLinger bounds how long a drain waits for the clients of the
// connections it refused to close them, which a client does once it has
// read the refusal. Until then the server goes on reading: closing a
// socket with unread bytes (a request the client wrote before it read the
// refusal) resets it, and a reset can discard the refusal from the
// client's receive buffer before the client reads it, leaving it a call
// it cannot know was not processed. Clients close within milliseconds; a
// starved one took 0.7-0.9 s. The wait ends as soon as every refused
// connection is closed, so only slow clients make a drain longer.
const RefusalLinger = 2 * time.Second

// RefusalLingerMax bounds how long the end of a drain waits, beyond each
// round's RefusalLinger, for the clients of the connections it refused
// between requests to close them (waitRefusedClosed), unless the drain's
// Linger says otherwise. Within it, the caller's context (Server.Shutdown's)
// is the bound that counts when it is shorter. A client that holds a
// refused connection open without reading it holds a drain this long.
const RefusalLingerMax = 10 * time.Second

// waitRefusedClosed is the end of a drain: it waits (bounded by linger, or
// RefusalLingerMax, and by ctx) until every connection refused after it
// carried a request has been closed. Each round's wait (refuseIdle) is
// bounded by RefusalLinger so that a starved client does not hold the
// rounds; but once the drain ends, http.Server.Shutdown closes a
// connection between requests at once, and a client starved past
// RefusalLinger that then writes a call into it, or had written one the
// server has not read, is reset, and cannot know that the call was not
// run. Such a client, once it runs, either reads the refusal and closes,
// or sends its call, which the server reads and abandons (AbandonRefused)
// before it closes the connection itself; so the connection leaves the
// tracker either way, and this wait ends as soon as the slowest such
// client has run, not after a fixed time that a loaded machine outlasts.
func (t *Tracker) waitRefusedClosed(ctx context.Context, linger time.Duration) {
	if linger <= 0 {
		linger = RefusalLingerMax
	}
	end := t.clock.Now().Add(linger)
	t.waitUntil(ctx, func() time.Duration {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, tc := range t.conns {
			if tc.lingers.Load() {
				return end.Sub(t.clock.Now()) // or a close wakes the wait
			}
		}
		return 0
	})
}

// refuseIdle writes refusal, a complete HTTP/1.1 answer that closes its
// connection, on every HTTP/1 connection that is between requests or has
// carried none yet, and then closes the connection's writing side; it
// waits (bounded by RefusalLinger, and by ctx) until each refused
// connection that had carried a request has been closed by its client,
// which a client does on reading the answer. It returns how many
// connections had been accepted when it chose them.
//
// It waits for nothing on a connection that has carried no request. Its
// refusal is written at once, or, over TLS, once the handshake is done (a
// refusal cannot be written before, and whether the connection speaks
// HTTP/2 is not known before) by a goroutine of its own: a handshake that
// never finishes held each round of refusals (and, under the tracker's
// lock, the accept loop) until it timed out. And the drain does not
// linger for such a connection's close: http.Server.Shutdown, which closes
// at once a connection between requests (whose client may have a call on
// its way, hence the linger), closes one that never carried a request only
// once it is five seconds old, and a client dialling again and again
// would otherwise hold every round for RefusalLinger.
func (t *Tracker) refuseIdle(ctx context.Context, refusal []byte) (acceptedN uint64) {
	type choice struct {
		tc      *Conn
		carried bool // it has carried a request: the drain lingers for its close
	}
	var chosen []choice
	var unshaken []*Conn
	t.mu.Lock()
	acceptedN = t.acceptedN
	for _, tc := range t.conns {
		if (tc.state != http.StateNew && tc.state != http.StateIdle) || tc.h2.Load() || tc.next.Load() != connFree {
			continue
		}
		if _, isTLS := tc.conn.(*tls.Conn); isTLS && tc.state == http.StateNew {
			unshaken = append(unshaken, tc)
		} else {
			chosen = append(chosen, choice{tc, tc.state == http.StateIdle})
		}
	}
	t.mu.Unlock()
	for _, tc := range unshaken {
		if tc.refusing.CompareAndSwap(false, true) {
			t.refusals.Go(func() { t.refuse(tc, refusal, false) })
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lingered []*Conn
	for _, c := range chosen {
		c.tc.refusing.Store(true)
		wg.Go(func() {
			if t.refuse(c.tc, refusal, c.carried) && c.carried {
				mu.Lock()
				lingered = append(lingered, c.tc)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	end := t.clock.Now().Add(RefusalLinger)
	t.waitUntil(ctx, func() time.Duration {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, tc := range lingered {
			if t.conns[tc.conn] == tc {
				return end.Sub(t.clock.Now()) // or a close wakes the wait
			}
		}
		return 0
	})
	return acceptedN
}

// refuse writes the drain's refusal on tc, unless it speaks HTTP/2 or a
// request was read on it first; carried says whether tc has carried a
// request. It reports whether it wrote.
//
// Over TLS, whether it speaks HTTP/2 is known once its handshake is done,
// which this does (bounded by refusalWriteTimeout) if the connection's
// serving goroutine has not begun it: writing first would begin it
// without a look at the protocol it chose. Without TLS, a client of
// HTTP/2 by prior knowledge (h2c) begins with its preface, looked for in
// the socket here, and track learns it once the server has read it; a
// preface still on its way when the refusal is written is not seen, and
// that connection breaks (its calls are not run: see serve).
func (t *Tracker) refuse(tc *Conn, refusal []byte, carried bool) bool {
	if c, ok := tc.conn.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), refusalWriteTimeout)
		err := c.HandshakeContext(ctx)
		cancel()
		if err != nil {
			return false // its serving goroutine closes it
		}
	}
	if speaksH2(tc.conn) || startsH2c(tc.conn) {
		tc.h2.Store(true)
	}
	if tc.h2.Load() {
		return false
	}
	if !tc.next.CompareAndSwap(connFree, connRefused) {
		return false
	}
	defer close(tc.refusalWritten)
	writeDrainRefusal(tc.conn, refusal)
	if carried {
		tc.lingers.Store(true)
	} else {
		t.mu.Lock()
		t.unusedRefused = t.clock.Now()
		t.mu.Unlock()
	}
	return true
}

// closeUnused closes the connections that never carried a request and
// are still open at the end of the drain: each refused one once its
// client has had RefusalLinger since the last such refusal to read it and
// close it (or has closed it), and those over TLS whose refusal waits
// for a handshake that is not done (no request can have been sent on
// them); one whose handshake finished after the last look may have a
// request unread in it, which the close resets. http.Server.Shutdown would
// wait until each was five seconds old before closing it, so a client
// that dialled until the listener closed, and then held its connections,
// held the drain that long after everything else was answered.
func (t *Tracker) closeUnused(ctx context.Context) {
	unused := func(tc *Conn) bool {
		return tc.state == http.StateNew && tc.refusing.Load() && !tc.h2.Load() && tc.next.Load() != connServing
	}
	t.waitUntil(ctx, func() time.Duration {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, tc := range t.conns {
			if unused(tc) && tc.next.Load() == connRefused {
				return t.unusedRefused.Add(RefusalLinger).Sub(t.clock.Now()) // or a close wakes the wait
			}
		}
		return 0
	})
	if ctx.Err() != nil {
		return
	}
	var open []net.Conn
	t.mu.Lock()
	for _, tc := range t.conns {
		if unused(tc) {
			open = append(open, tc.conn)
		}
	}
	t.mu.Unlock()
	for _, c := range open {
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn() // no close_notify: nobody may be reading
		}
		_ = c.Close()
	}
}

// writeDrainRefusal writes the drain's refusal on c and closes c's writing
// side, so the client reads the answer and then the end of the stream;
// the server goes on reading c until the client closes it. A TLS
// connection whose handshake is under way gets it once the handshake is
// done.
func writeDrainRefusal(c net.Conn, refusal []byte) {
	// A socket deadline, on real time, and generous: the refusal fits in
	// any send buffer, and a write that times out closes the connection
	// unanswered, which is what the refusal is there to prevent.
	_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
	if _, err := c.Write(refusal); err != nil {
		_ = c.Close()
		return
	}
	type closeWriter interface{ CloseWrite() error }
	if tc, ok := c.(*tls.Conn); ok {
		_ = tc.CloseWrite() // close_notify
		c = tc.NetConn()
	}
	if cw, ok := c.(closeWriter); ok {
		_ = cw.CloseWrite()
	}
}

// refusalWriteTimeout bounds the write of the drain's refusal, a TLS
// handshake under way included.
const refusalWriteTimeout = 10 * time.Second

// speaksH2 reports whether c negotiated HTTP/2 over TLS.
func speaksH2(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// h2cPreface is how every connection of HTTP/2 by prior knowledge begins.
const h2cPreface = "PRI * HTTP/2.0"

// startsH2c reports whether c, without TLS, begins with the HTTP/2
// preface waiting unread in its socket.
func startsH2c(c net.Conn) bool {
	if _, ok := c.(*tls.Conn); ok {
		return false
	}
	var head [len(h2cPreface)]byte
	n := 0
	withFD(c, func(fd uintptr) { n = peekInput(fd, head[:]) })
	return n == len(head) && string(head[:]) == h2cPreface
}

// AbandonRefused ends a request that arrived on a connection the drain
// has answered (see above): the refusal is its answer, so it is not
// served. It waits until the refusal is on its way (the drain claims the
// connection before it writes), and reads the request's body (bounded),
// so that closing the connection neither ends it unanswered nor resets it
// under the refusal the client has not read yet.
func AbandonRefused(w http.ResponseWriter, r *http.Request, tc *Conn) {
	select {
	case <-tc.refusalWritten:
	case <-r.Context().Done():
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	panic(http.ErrAbortHandler) // close without writing a second answer
}

// unreadBytes returns how many bytes wait unread in c's socket, or 0 where
// that cannot be told.
func unreadBytes(c net.Conn) int {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	n := 0
	withFD(c, func(fd uintptr) { n = pendingInput(fd) })
	return n
}

// withFD calls f with the file descriptor beneath c (a connection or a
// listener), if it has one.
func withFD(c any, f func(fd uintptr)) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(f)
}

// GatedListener is the listener an http.Server serves on, so that a drain
// can stop accepting before it calls http.Server.Shutdown (see above).
// Closing a listener resets every connection still in its accept queue:
// the kernel completes a client's handshake before anyone accepts, so
// such a client may have written a call, and the reset leaves it unable to
// tell that the call was never read (Go's transport reports "read:
// connection reset by peer" after the request went out). A serving
// goroutine that has been handed a connection and not yet come back to
// Accept (a loaded machine, the race detector) leaves every dial of that
// moment in the queue. So stop does not close the listener itself: it
// wakes Accept, and Accept, on the serving goroutine, accepts what the
// kernel has queued (the drain then answers those connections like any
// other) until the queue is empty, and only then closes the listener
// beneath, with no goroutine switch between the last look at the queue
// and the close. Accept then waits, without returning, until the
// http.Server closes it. Its Accept is called by one goroutine, which
// hands each connection to ConnContext before it accepts again: once
// Accept has acknowledged the stop, every connection it returned is known
// to the tracker.
type GatedListener struct {
	net.Listener
	stopped chan struct{} // closed by stop
	acked   chan struct{} // closed once Accept has emptied the queue and closed the listener
	closed  chan struct{} // closed by Close, which http.Server.Serve calls as it returns

	stopOnce, ackOnce, closeOnce, beneathOnce sync.Once
	// stopAt is when stop began; only the serving goroutine reads it,
	// after stopped is closed.
	stopAt time.Time
}

// NewGatedListener returns a GatedListener over l, which accepts as l
// does until the drain stops it.
func NewGatedListener(l net.Listener) *GatedListener {
	return &GatedListener{Listener: l, stopped: make(chan struct{}), acked: make(chan struct{}), closed: make(chan struct{})}
}

// deadliner is a listener whose Accept can be woken and bounded.
type deadliner interface{ SetDeadline(time.Time) error }

// Accept accepts the next connection; once the listener is stopped, it
// accepts those left in the kernel's queue, closes the listener beneath,
// and waits until it is closed.
func (l *GatedListener) Accept() (net.Conn, error) {
	select {
	case <-l.stopped:
		return l.acceptQueued()
	default:
	}
	c, err := l.Listener.Accept()
	if err == nil {
		return c, nil
	}
	select {
	case <-l.stopped:
		// Woken by stop (or failed since): empty the queue first.
		return l.acceptQueued()
	default:
		return nil, err
	}
}

// acceptQueued returns the next connection the kernel has queued, for as
// long as there is one (within queueDrainBound of the stop, against
// clients that never stop dialling); then it closes the listener beneath,
// acknowledges the stop, and waits until Close. It does not wait for
// dials that have not arrived: the listener closes as soon as its queue
// is empty, as it did before, so clients dialling now are refused (which
// they know was never sent) rather than accepted and answered late.
// Where the queue cannot be counted (not Linux), one Accept bounded by
// queuedAcceptWait stands for the look.
func (l *GatedListener) acceptQueued() (net.Conn, error) {
	if d, ok := l.Listener.(deadliner); ok {
		for time.Since(l.stopAt) < queueDrainBound {
			n := AcceptQueueLen(l.Listener)
			if n == 0 && queueCountable {
				break
			}
			// The deadline only bounds the wait of an Accept that finds
			// the queue empty: one with a connection queued takes it at
			// once.
			_ = d.SetDeadline(time.Now().Add(queuedAcceptWait))
			c, err := l.Listener.Accept()
			if err == nil {
				return c, nil
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) || !queueCountable {
				break
			}
			// Timed out with a connection counted (the goroutine was
			// descheduled past its deadline): look again.
		}
	}
	_ = l.closeBeneath()
	l.ackOnce.Do(func() { close(l.acked) })
	<-l.closed
	return nil, net.ErrClosed
}

// queuedAcceptWait bounds one Accept of the queue's drain; queueDrainBound
// bounds the whole drain, in real time, like every socket deadline.
const (
	queuedAcceptWait = 10 * time.Millisecond
	queueDrainBound  = 200 * time.Millisecond
)

// stop stops accepting: it wakes Accept, which empties the kernel's queue
// and closes the listener beneath (see GatedListener), and returns once it
// has (or ctx ends, or the listener is closed, which http.Server.Serve
// does as it returns, or the serving goroutine has not come back to Accept
// within acceptStopTimeout, when it is closed here). A listener that
// cannot be woken (no deadlines) is closed here at once.
func (l *GatedListener) Stop(ctx context.Context) {
	l.stopOnce.Do(func() {
		l.stopAt = time.Now()
		close(l.stopped)
		if d, ok := l.Listener.(deadliner); ok {
			_ = d.SetDeadline(time.Now()) // wakes a waiting Accept
		} else {
			_ = l.closeBeneath()
		}
	})
	// Real time: this waits for a goroutine to be scheduled, not for a
	// peer.
	timer := time.NewTimer(acceptStopTimeout)
	defer timer.Stop()
	select {
	case <-l.acked:
	case <-l.closed:
	case <-ctx.Done():
	case <-timer.C:
		_ = l.closeBeneath()
	}
}

// acceptStopTimeout bounds how long stop waits for the serving goroutine
// to come back to Accept: it does so within microseconds (a loaded
// machine: milliseconds) while Serve runs; once Serve has returned, the
// listener is closed and stop does not wait.
const acceptStopTimeout = 5 * time.Second

// closeBeneath closes the listener beneath once; later calls return nil.
func (l *GatedListener) closeBeneath() error {
	var err error
	l.beneathOnce.Do(func() { err = l.Listener.Close() })
	return err
}

// Close closes the listener. After a stop it has been closed beneath
// already, which is no error.
func (l *GatedListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		err = l.closeBeneath()
	})
	return err
}

// Accepted returns how many connections have been accepted so far.
func (t *Tracker) Accepted() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acceptedN
}

// WaitRefusals waits for the refusals still waiting on a TLS handshake
// (see refuseIdle); once every connection is closed, they end at once.
func (t *Tracker) WaitRefusals() { t.refusals.Wait() }

// Open returns how many connections are open.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}
