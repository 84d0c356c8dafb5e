package hello

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/probe"
)

// Loop is an endpoint's loop: it says hello, keeps the session it got
// until the session is lost, and waits before the next hello as the last
// one's outcome asks (the backoff, a draining server's pace, a server that
// holds a refusal open, or the prober of an address where nothing
// listens). S is the client's session; the client gives the loop what it
// does with one through the func values.
type Loop[S comparable] struct {
	// Ctx is the endpoint's life: the loop ends with it.
	Ctx     context.Context
	Clock   clockwork.Clock
	Backoff probe.Backoff
	// Kick wakes the loop when a call saw the session die.
	Kick <-chan struct{}
	// Announced holds a token while the endpoint's source has announced
	// the endpoint (ready again) since the loop last said hello.
	Announced <-chan struct{}
	// Hello says one hello. With hold, it asks the server to hold a
	// refusal for incompatible versions open until it drains.
	Hello func(hold bool) Result[S]
	// Observe, if not nil, is told what each hello came to while the
	// endpoint runs.
	Observe func(Result[S])
	// Move moves the endpoint to state, with its session when it is
	// Ready (the zero S otherwise) and err as why it is not ready, and
	// marks its first round of hellos over.
	Move func(state State, sess S, err error)
	// KeepAlive keeps sess alive until it is lost, and returns the state
	// to report and why (Stopped once the endpoint stops).
	KeepAlive func(sess S) (State, error)
	// Lose takes sess out of routing in state, for err.
	Lose func(sess S, state State, err error)
	// Close tells the server that sess is over, once, best effort.
	Close func(sess S)
	// WaitListening waits at the prober of the endpoint's address until
	// something listens there, Kick fires or the endpoint is announced.
	WaitListening func()
}

// pace is what an endpoint's loop carries from one hello to the next.
type pace[S comparable] struct {
	failures int
	// drainRefusals counts the hellos a draining server refused in a row.
	drainRefusals int
	// hold: the last refusal was one the server can hold open.
	hold bool
	// last is the session last held, closed when the loop ends.
	last S
}

// Run is the endpoint's loop: hello, keep the session alive, repeat,
// until Ctx ends.
func (l *Loop[S]) Run() {
	var p pace[S]
	var none S
	defer func() {
		l.Move(Stopped, none, nil)
		if p.last != none {
			l.Close(p.last)
		}
	}()
	for l.Ctx.Err() == nil {
		if !l.attempt(&p) {
			return
		}
	}
}

// attempt says one hello and, on success, keeps its session alive until
// it is lost; on failure it waits as the failure asks. It reports false
// once the endpoint is done.
func (l *Loop[S]) attempt(p *pace[S]) bool {
	// After a refusal the server can hold open (an incompatibility that
	// its replacement may not have), ask it to hold the next one until it
	// drains: the client then learns of its replacement at once.
	askedToHold := p.hold
	// This attempt is the dial an earlier announcement asked for.
	select {
	case <-l.Announced:
	default:
	}
	began := l.Clock.Now()
	h := l.Hello(askedToHold)
	held := askedToHold && l.Clock.Since(began) >= HeldLongEnough
	p.hold = h.Holdable()
	if l.Observe != nil && l.Ctx.Err() == nil {
		l.Observe(h)
	}
	if h.Err == nil {
		return l.hold(p, h.Sess)
	}
	if l.Ctx.Err() != nil {
		return false
	}
	var none S
	l.Move(h.State, none, h.Err)
	if p.hold && (!askedToHold || held) {
		// The next attempt is held by the server, not paced here. A
		// server that answers a held attempt at once (one that does not
		// hold refusals) is paced by the backoff like any failure.
		return true
	}
	return l.wait(p, h.State, h.Err)
}

// hold keeps sess alive until it is lost, and reports false once the
// endpoint is done.
func (l *Loop[S]) hold(p *pace[S], sess S) bool {
	var none S
	p.failures, p.drainRefusals = 0, 0
	p.last = sess
	l.Move(Ready, sess, nil)
	state, err := l.KeepAlive(sess)
	if l.Ctx.Err() != nil {
		return false
	}
	l.Lose(sess, state, err)
	switch state {
	case Draining:
		// Acknowledge the drain: nothing more will be sent here, and
		// the server waits for that before closing connections.
		l.Close(sess)
		p.last = none
	case Unreachable:
		p.last = none
	}
	return true
}

// wait waits after a failed hello as its failure asks, and reports false
// once the endpoint is done.
func (l *Loop[S]) wait(p *pace[S], state State, err error) bool {
	var delay time.Duration
	switch {
	case state == Draining:
		// "Not here, go elsewhere": calls go to the other endpoints
		// while this one is paced apart (DrainingPace). The backoff
		// starts afresh for whatever answers next: the replacement,
		// or nothing listening (the prober's pace).
		delay = DrainingPace(l.Backoff, p.drainRefusals)
		p.drainRefusals++
		p.failures = 0
	case errors.Is(err, syscall.ECONNREFUSED):
		// Nothing listens there: the address's prober, shared by the
		// process, dials it and says when something does (framework/internal/probe).
		p.failures, p.drainRefusals = 0, 0
		l.WaitListening()
		return true
	default:
		p.drainRefusals = 0
		delay = l.Backoff.Delay(p.failures)
		p.failures++
	}
	t := l.Clock.NewTimer(delay)
	select {
	case <-l.Ctx.Done():
		t.Stop()
		return false
	case <-t.Chan():
	case <-l.Kick:
		t.Stop()
	case <-l.Announced:
		t.Stop()
	}
	return true
}

// RunPinned keeps a pinned endpoint's one session, sess, routable: it has
// no hello and no session to lose, only connections that fail. The client
// makes the endpoint routable with sess before the loop starts (a pinned
// peer needs no first round, so a call made at once must not depend on
// when the loop is first scheduled). After a failed connection (routable
// no longer returns sess) the endpoint rests for a backoff delay, then is
// routable again.
func (l *Loop[S]) RunPinned(sess S, routable func() S) {
	var none S
	failures := 0
	defer l.Move(Stopped, none, nil)
	for {
		select {
		case <-l.Ctx.Done():
			return
		case <-l.Kick:
		}
		if routable() == sess {
			failures = 0 // a kick without a loss
			continue
		}
		t := l.Clock.NewTimer(l.Backoff.Delay(failures))
		failures++
		select {
		case <-l.Ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
		}
		l.Move(Ready, sess, nil)
	}
}
