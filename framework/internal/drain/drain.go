// Package drain is a server's drain, apart from the server it drains:
// when its first phase is over (nothing in flight, every session closed or
// lapsed, no call for the quiet period), how a Shutdown waits for that,
// and the second phase's handling of connections (the refusal written on
// those between requests, the listener kept open while clients still
// dial). It is separate because these rules are the drain's alone: the
// server gives it what it reads (its clock, its counts, a wake-up
// channel) through [Phase], and the connections' part is
// framework/internal/conns'.
package drain

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/conns"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Phase is what the drain's first phase reads of the server it drains.
type Phase struct {
	// Clock is the server's clock; Timeout bounds the phase and Quiet is
	// how long no call or session close must have arrived.
	Clock          clockwork.Clock
	Timeout, Quiet time.Duration
	// Now is the server's clock reading, in nanoseconds since it started;
	// LastArrival is when the last call or session close arrived while
	// draining, on the same clock.
	Now         func() int64
	LastArrival *atomic.Int64
	// InFlight counts the calls running; Sessions counts the sessions
	// still held.
	InFlight *atomic.Int64
	Sessions func() int
	// Wake is signalled when something the phase waits for may have
	// happened: a call ended or a session went.
	Wake <-chan struct{}
}

// Wait waits until the first phase is over ([Phase.Drained]), its Timeout
// passes or ctx ends.
func (p Phase) Wait(ctx context.Context) {
	deadline := p.Clock.NewTimer(p.Timeout)
	defer deadline.Stop()
	for {
		done, quietLeft := p.Drained()
		if done || !p.wait(ctx, deadline.Chan(), quietLeft) {
			return
		}
	}
}

// Drained reports whether the first phase of a drain is over: nothing in
// flight, every session closed by its client (which a client does once it
// has stopped sending here) or lapsed, and no call or session close for
// Quiet, so a call written before its client's close has been read.
// quietLeft is how long until the quiet period is over, if nothing arrives.
func (p Phase) Drained() (done bool, quietLeft time.Duration) {
	quietLeft = p.Quiet - time.Duration(p.Now()-p.LastArrival.Load())
	if p.InFlight.Load() > 0 || p.Sessions() > 0 {
		return false, max(quietLeft, 0)
	}
	return quietLeft <= 0, max(quietLeft, 0)
}

// wait waits until a call ends or a session goes, or the quiet period
// (quietLeft from now, if not over yet) would be over; it returns false when
// ctx ends or the drain's deadline passes first.
func (p Phase) wait(ctx context.Context, deadline <-chan time.Time, quietLeft time.Duration) bool {
	var quiet <-chan time.Time
	if quietLeft > 0 {
		t := p.Clock.NewTimer(quietLeft)
		defer t.Stop()
		quiet = t.Chan()
	}
	select {
	case <-ctx.Done():
		return false
	case <-deadline:
		return false
	case <-p.Wake:
	case <-quiet:
	}
	return true
}

// Connections begins the drain's second phase: it waits until every
// open connection that has carried a request has been idle for quiet, so
// that no connection is answered under a call being written into it, then
// answers every HTTP/1 connection between requests, or not used yet, with
// the drain's refusal ([Refusal] of component) and waits (for
// conns.RefusalLinger at most) until the clients of those between
// requests have closed them; then it keeps the listener open until no
// connection has been accepted for a dial quiet period, so that closing it
// resets no connection a call was written into (see package
// framework/internal/conns). Then it closes the listener and answers the
// connections accepted since the last refusal the same way: once
// http.Server.Shutdown has begun, a request read on a connection that was
// not answered is dropped with its connection. It closes the connections
// that never carried a request once their clients have had
// conns.RefusalLinger to read the refusal; Shutdown then closes what is
// left. Connections on which no request's headers have arrived hold none
// of these waits. A nil tracker (a server that never served) has nothing
// to do.
func Connections(ctx context.Context, tracker *conns.Tracker, gl *conns.GatedListener, component string, quiet time.Duration) {
	if tracker == nil {
		return
	}
	dq := min(quiet, maxDialQuiet)
	tracker.Drain(ctx, conns.Drain{Refusal: Refusal(component), Quiet: quiet, DialQuiet: dq, Bound: maxDialQuiets * dq, StopAccepting: gl.Stop})
}

// maxDialQuiet caps how long no client may dial a draining server before
// it closes its listener: long enough for the handshake retries of
// clients that heard of the drain (their backoff begins at 5ms) to thin
// out, short enough not to keep a replacement waiting for the address.
// maxDialQuiets bounds, in those periods, how long it keeps the listener
// open for clients that go on dialling it.
const (
	maxDialQuiet  = 100 * time.Millisecond
	maxDialQuiets = 10
)

// Refusal is the answer a draining server (component) writes unasked on
// a connection between requests before it closes it: the one a call
// arriving there would get (unavailable, not processed, draining), as a
// 408 Request Timeout that closes the connection, which HTTP clients take
// for a server closing an idle connection.
func Refusal(component string) []byte {
	e := apierror.Errorf(apierror.CodeUnavailable, "%s is draining and closes this connection unused: resend to another endpoint", component)
	body, err := json.Marshal(apierror.ToWire(e))
	if err != nil {
		body = []byte(`{"code":"unavailable"}`)
	}
	head := fmt.Sprintf("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: %s\r\n%s: 1\r\n%s: 1\r\nContent-Length: %d\r\n\r\n",
		protocol.ContentTypeJSON, protocol.HeaderDraining, protocol.HeaderNotProcessed, len(body))
	return append([]byte(head), body...)
}
