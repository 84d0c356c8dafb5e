package framework

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/watch"
	"github.com/lockstep-dev/lockstep/handshake"
)

// routeWait is the one wait for a routable endpoint: calls, topic writes
// and informers block here while no endpoint holds a session that can
// carry them. One routeWait lives as long as one request, so its ready
// timeout starts the first time the request waits and bounds all its
// waits together, and its blocked time is counted once.
type routeWait struct {
	c *Client
	// failFast fails at once instead of waiting, once every known
	// endpoint has had its first handshake round (see [FailFast]).
	failFast bool
	// timeout is ClientConfig.ReadyTimeout, or 0 for a wait as long as
	// ctx (informers wait as long as they live).
	timeout time.Duration
	// counted makes the wait visible to status pages and observers, as a
	// caller blocked without a compatible peer.
	counted bool
	// closed ends the wait with closedErr: the publisher or informer the
	// request belongs to stopped.
	closed    <-chan struct{}
	closedErr error
	// freeResends is how many resends go without a pause (see pace).
	freeResends int
	// what names the request in the blocked log: "call nodestatus
	// ReportStatus", "watch NodeHealth".
	what string
	// watch is what a feed's wait wants, nil for any other: its log
	// says why each endpoint cannot carry the watch (see
	// [Client.watchWhy]), which a session at a version the topic
	// cannot travel at is, though ready for calls.
	watch *watch.Want
	// logTimer fires when the wait is due to be logged (see logBlocked).
	logTimer clockwork.Timer

	timer  clockwork.Timer
	since  time.Time
	ticket uint64
}

// newCallWait returns the wait of one caller's request.
func (c *Client) newCallWait(failFast bool) *routeWait {
	return &routeWait{c: c, failFast: failFast, timeout: c.cfg.ReadyTimeout, counted: true, freeResends: 3}
}

// until waits until ready reports true, which it calls each time routing
// changes; ready picks the endpoint itself. It fails with the context's
// error (deadline_exceeded or canceled, saying what it waited for), with
// unavailable or incompatible_peer once the ready timeout passes or at
// once under FailFast, or when the client or w.closed closes.
func (w *routeWait) until(ctx context.Context, ready func() bool) error {
	c := w.c
	for {
		changed := c.changedCh()
		if ready() {
			return nil
		}
		if w.failFast {
			if err := c.firstRounds(ctx); err != nil {
				return err
			}
			if ready() {
				return nil
			}
			return c.blockedError(CodeUnavailable)
		}
		timeout := w.start()
		select {
		case <-changed:
		case <-w.logTimer.Chan():
			c.logBlocked(w.what, w.since, w.why())
			w.logTimer.Reset(blockedLogEvery)
		case <-ctx.Done():
			return contextError(ctx, c.peerState())
		case <-timeout:
			return c.blockedError(CodeUnavailable)
		case <-c.ctx.Done():
			return Errorf(CodeUnavailable, "client closed")
		case <-w.closed:
			return w.closedErr
		}
	}
}

// why is the blocked log's account of the wait: a watch's own, or ""
// for the client's peer state.
func (w *routeWait) why() string {
	if w.watch == nil {
		return ""
	}
	return w.c.watchWhy(*w.watch)
}

// start begins the blocked accounting and the ready timeout the first time
// the request waits, and returns the timeout's channel (nil: none).
func (w *routeWait) start() <-chan time.Time {
	c := w.c
	if w.since.IsZero() {
		w.since = c.cfg.Clock.Now()
		// Before enter: once the wait shows in the status, its log timer
		// runs (tests advance a fake clock from that moment).
		w.logTimer = c.cfg.Clock.NewTimer(blockedLogAfter)
		if w.counted {
			w.ticket = c.blocked.enter(w.since)
		}
		if w.timeout > 0 {
			w.timer = c.cfg.Clock.NewTimer(w.timeout)
		}
	}
	if w.timer == nil {
		return nil
	}
	return w.timer.Chan()
}

// done ends the wait's accounting; call it once the request is over.
func (w *routeWait) done() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.logTimer != nil {
		w.logTimer.Stop()
	}
	if w.since.IsZero() || !w.counted {
		return
	}
	c := w.c
	c.blocked.leave(w.ticket)
	if c.cfg.Observer != nil {
		c.cfg.Observer.Blocked(c.contract.Name(), c.cfg.Clock.Since(w.since))
	}
}

// pace waits before the n-th attempt of one request (counting from 0) once
// something keeps refusing it: the first freeResends go at once, later ones
// after the client's backoff. It fails like [routeWait.until] when ctx, the
// client or w.closed ends first.
func (w *routeWait) pace(ctx context.Context, n int) error {
	if n < w.freeResends {
		return nil
	}
	c := w.c
	t := c.cfg.Clock.NewTimer(c.cfg.Backoff.Delay(n - w.freeResends))
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return contextError(ctx, nil)
	case <-c.ctx.Done():
		return Errorf(CodeUnavailable, "client closed")
	case <-w.closed:
		return w.closedErr
	}
}

// A request blocked without a compatible peer is logged once it has waited
// blockedLogAfter (a start-up's first handshake, milliseconds long, stays
// quiet), and then at most once per blockedLogEvery for the whole client,
// however many requests wait: a version mismatch that blocks every call
// for an hour writes 120 lines, not one per call.
const (
	blockedLogAfter = time.Second
	blockedLogEvery = 30 * time.Second
)

// blockedCalls tracks the calls of a client that wait for a compatible
// peer, so its status says how many wait and for how long. A call enters
// once, when it first has to wait, and leaves when it stops waiting for
// good (sent, failed or given up).
type blockedCalls struct {
	mu    sync.Mutex
	next  uint64
	since map[uint64]time.Time
	// logged is when the client last logged a blocked request.
	logged time.Time
}

// enter records a call that began waiting at now and returns its ticket.
func (b *blockedCalls) enter(now time.Time) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since == nil {
		b.since = map[uint64]time.Time{}
	}
	b.next++
	b.since[b.next] = now
	return b.next
}

// leave forgets a ticket from enter.
func (b *blockedCalls) leave(ticket uint64) {
	b.mu.Lock()
	delete(b.since, ticket)
	b.mu.Unlock()
}

// snapshot returns how many calls wait at now and the longest wait.
func (b *blockedCalls) snapshot(now time.Time) (n int, longest time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.since {
		longest = max(longest, now.Sub(t))
	}
	return len(b.since), longest
}

// logDue reports whether a blocked request may log at now, and if so
// records that it did: the client's blocked-request log is rate-limited
// to one line per blockedLogEvery.
func (b *blockedCalls) logDue(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.logged.IsZero() && now.Sub(b.logged) < blockedLogEvery {
		return false
	}
	b.logged = now
	return true
}

// logBlocked logs, rate-limited (see logDue), that a request (what: "call
// nodestatus ReportStatus", "watch NodeHealth") has waited since since
// without a compatible peer, and why: each endpoint's state, and for a
// refusal who refused, for which reason, and which versions each side
// offered. A request with an account of its own gives it as why (a watch
// says which version each session agreed and why the topic cannot
// travel at it); "" is the client's peer state.
func (c *Client) logBlocked(what string, since time.Time, why string) {
	now := c.cfg.Clock.Now()
	if !c.blocked.logDue(now) {
		return
	}
	if why == "" {
		why = c.peerState().why
	}
	n, longest := c.blocked.snapshot(now)
	offered := make([]string, len(c.offers))
	for i, o := range c.offers {
		offered[i] = o.Version
	}
	c.cfg.Logger.Warn("lockstep: waiting for a compatible peer",
		"waiting", what, "for", now.Sub(since).Round(time.Millisecond),
		"contract", c.contract.Name(), "server", c.contract.Server(), "offered", strings.Join(offered, ","),
		"blocked", n, "longestBlocked", longest.Round(time.Millisecond),
		"why", why)
}

// PeerState is the state of a client's peers when a request found none to
// carry it: what the request waited for and why each endpoint could not
// carry it. A request that fails for want of a peer (unavailable, or
// incompatible_peer) has it as its cause; one whose context ended while it
// waited has it beside the context's error, which alone is the message.
// Either way errors.As finds it:
//
//	var ps *framework.PeerState
//	if errors.As(err, &ps) { log.Print(ps) }
type PeerState struct {
	// Contract, Version and Server name what the client waited for: a
	// Server component speaking Contract at Version.
	Contract, Version, Server string
	// Endpoints describes every endpoint, sorted by URL.
	Endpoints []EndpointStatus
	// Refused is true when some endpoint refused the handshake: a peer
	// answers, but speaks no version the client offers (or refuses the
	// client for another reason), so waiting longer may not help.
	Refused bool
	// why is the one-line account Error returns.
	why string
}

// Error says in one line what the client waited for and why each endpoint
// could not carry it.
func (p *PeerState) Error() string {
	return "no compatible " + p.Server + " for " + p.Contract + " " + p.Version + ": " + p.why
}

// peerState returns the client's [PeerState] now.
func (c *Client) peerState() *PeerState {
	c.mu.Lock()
	eps := make([]*endpoint, 0, len(c.endpoints))
	for _, base := range sortedKeys(c.endpoints) {
		eps = append(eps, c.endpoints[base])
	}
	c.mu.Unlock()
	ps := &PeerState{Contract: c.contract.Name(), Version: c.contract.Version(), Server: c.contract.Server(),
		Endpoints: make([]EndpointStatus, len(eps))}
	if len(eps) == 0 {
		ps.why = "no endpoint known"
		return ps
	}
	parts := make([]string, len(eps))
	for i, e := range eps {
		ps.Endpoints[i] = e.status()
		parts[i] = e.why()
		if ps.Endpoints[i].State == string(stateRefused) {
			ps.Refused = true
		}
	}
	ps.why = strings.Join(parts, "; ")
	return ps
}

// why says in a few words why e carries no request now: its URL and state,
// then for a refusal its reason and the refusal's own sentence (which names
// both sides and what each offers), else the last error. Codes and prefixes
// that the state already says are not repeated.
func (e *endpoint) why() string {
	e.mu.Lock()
	state, err := e.state, e.lastErr
	e.mu.Unlock()
	s := e.url + " " + string(state)
	if err == nil || state == stateReady {
		return s
	}
	var ae *Error
	if !errors.As(err, &ae) {
		return s + ": " + err.Error()
	}
	var r handshake.Refusal
	if json.Unmarshal(ae.Details(), &r) == nil && r.Reason != "" {
		if string(r.Reason) != string(state) {
			s += " (" + string(r.Reason) + ")"
		}
		return s + ": " + r.Message
	}
	if string(ae.Code()) != string(state) {
		s += " (" + string(ae.Code()) + ")"
	}
	return s + ": " + ae.Message()
}
