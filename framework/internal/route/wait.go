// Package route is a client's one wait for a routable endpoint, and the
// accounting of the time requests spend in it: calls, topic writes and
// informers block in a [Wait] while no endpoint holds a session that can
// carry them, bounded by the client's ready timeout, their context and the
// client's life, and the client's status says how many wait and for how
// long ([Blocked]). It is separate because the wait's rules (when it
// fails at once, when it times out, when it logs, how resends are paced)
// are one job; it knows nothing of endpoints or sessions: the client
// gives it what it reads through [Client], and each wait is handed a
// function that picks the endpoint itself.
package route

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// Client is what the waits of one client read of it.
type Client struct {
	Clock clockwork.Clock
	// Life ends with the client; every wait then fails unavailable.
	Life context.Context
	// Delay is the client's backoff: the delay before the n-th (from 0)
	// paced resend.
	Delay func(n int) time.Duration
	// Changed returns a channel closed when routing next changes.
	Changed func() <-chan struct{}
	// FirstRounds waits until every known endpoint has had its first
	// handshake round (for FailFast).
	FirstRounds func(ctx context.Context) error
	// NoPeer is the error of a request that found no endpoint to carry it;
	// PeerState is the peers' state, kept beside a context's error.
	NoPeer    func() error
	PeerState func() error
	// Log logs, rate-limited by Calls, that a request (what) has waited
	// since since, and why ("" for the client's peer state).
	Log func(what string, since time.Time, why string)
	// Observe, if not nil, is told how long a counted wait blocked.
	Observe func(time.Duration)
	// Calls tracks the counted waits.
	Calls *Blocked
}

// Wait is the one wait for a routable endpoint of one request. One Wait
// lives as long as one request, so its ready timeout starts the first time
// the request waits and bounds all its waits together, and its blocked
// time is counted once.
type Wait struct {
	Client *Client
	// FailFast fails at once instead of waiting, once every known
	// endpoint has had its first handshake round (framework.FailFast).
	FailFast bool
	// Timeout is ClientConfig.ReadyTimeout, or 0 for a wait as long as
	// ctx (informers wait as long as they live).
	Timeout time.Duration
	// Counted makes the wait visible to status pages and observers, as a
	// caller blocked without a compatible peer.
	Counted bool
	// Closed ends the wait with ClosedErr: the publisher or informer the
	// request belongs to stopped.
	Closed    <-chan struct{}
	ClosedErr error
	// FreeResends is how many resends go without a pause (see Pace).
	FreeResends int
	// What names the request in the blocked log: "call nodestatus
	// ReportStatus", "watch NodeHealth".
	What string
	// Why, if not nil, is the request's own account of why it waits, for
	// the blocked log: a watch says why each endpoint cannot carry it,
	// which a session at a version the topic cannot travel at is, though
	// ready for calls. Nil logs the client's peer state.
	Why func() string

	// logTimer fires when the wait is due to be logged (see Client.Log).
	logTimer clockwork.Timer
	timer    clockwork.Timer
	since    time.Time
	ticket   uint64
}

// Until waits until ready reports true, which it calls each time routing
// changes; ready picks the endpoint itself. It fails with the context's
// error (deadline_exceeded or canceled, saying what it waited for), with
// unavailable or incompatible_peer once the ready timeout passes or at
// once under FailFast, or when the client or w.Closed closes.
func (w *Wait) Until(ctx context.Context, ready func() bool) error {
	c := w.Client
	for {
		changed := c.Changed()
		if ready() {
			return nil
		}
		if w.FailFast {
			if err := c.FirstRounds(ctx); err != nil {
				return err
			}
			if ready() {
				return nil
			}
			return c.NoPeer()
		}
		timeout := w.start()
		select {
		case <-changed:
		case <-w.logTimer.Chan():
			c.Log(w.What, w.since, w.why())
			w.logTimer.Reset(LogEvery)
		case <-ctx.Done():
			return apierror.FromContext(ctx, c.PeerState())
		case <-timeout:
			return c.NoPeer()
		case <-c.Life.Done():
			return apierror.Errorf(apierror.CodeUnavailable, "client closed")
		case <-w.Closed:
			return w.ClosedErr
		}
	}
}

// why is the blocked log's account of the wait: the request's own, or ""
// for the client's peer state.
func (w *Wait) why() string {
	if w.Why == nil {
		return ""
	}
	return w.Why()
}

// start begins the blocked accounting and the ready timeout the first time
// the request waits, and returns the timeout's channel (nil: none).
func (w *Wait) start() <-chan time.Time {
	c := w.Client
	if w.since.IsZero() {
		w.since = c.Clock.Now()
		// Before enter: once the wait shows in the status, its log timer
		// runs (tests advance a fake clock from that moment).
		w.logTimer = c.Clock.NewTimer(LogAfter)
		if w.Counted {
			w.ticket = c.Calls.enter(w.since)
		}
		if w.Timeout > 0 {
			w.timer = c.Clock.NewTimer(w.Timeout)
		}
	}
	if w.timer == nil {
		return nil
	}
	return w.timer.Chan()
}

// Done ends the wait's accounting; call it once the request is over.
func (w *Wait) Done() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.logTimer != nil {
		w.logTimer.Stop()
	}
	if w.since.IsZero() || !w.Counted {
		return
	}
	c := w.Client
	c.Calls.leave(w.ticket)
	if c.Observe != nil {
		c.Observe(c.Clock.Since(w.since))
	}
}

// Pace waits before the n-th attempt of one request (counting from 0) once
// something keeps refusing it: the first FreeResends go at once, later ones
// after the client's backoff. It fails like [Wait.Until] when ctx, the
// client or w.Closed ends first.
func (w *Wait) Pace(ctx context.Context, n int) error {
	if n < w.FreeResends {
		return nil
	}
	c := w.Client
	t := c.Clock.NewTimer(c.Delay(n - w.FreeResends))
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return apierror.FromContext(ctx, nil)
	case <-c.Life.Done():
		return apierror.Errorf(apierror.CodeUnavailable, "client closed")
	case <-w.Closed:
		return w.ClosedErr
	}
}

// A request blocked without a compatible peer is logged once it has waited
// LogAfter (a start-up's first handshake, milliseconds long, stays
// quiet), and then at most once per LogEvery for the whole client,
// however many requests wait: a version mismatch that blocks every call
// for an hour writes 120 lines, not one per call.
const (
	LogAfter = time.Second
	LogEvery = 30 * time.Second
)

// Blocked tracks the calls of a client that wait for a compatible
// peer, so its status says how many wait and for how long. A call enters
// once, when it first has to wait, and leaves when it stops waiting for
// good (sent, failed or given up).
type Blocked struct {
	mu    sync.Mutex
	next  uint64
	since map[uint64]time.Time
	// logged is when the client last logged a blocked request.
	logged time.Time
}

// enter records a call that began waiting at now and returns its ticket.
func (b *Blocked) enter(now time.Time) uint64 {
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
func (b *Blocked) leave(ticket uint64) {
	b.mu.Lock()
	delete(b.since, ticket)
	b.mu.Unlock()
}

// Snapshot returns how many calls wait at now and the longest wait.
func (b *Blocked) Snapshot(now time.Time) (n int, longest time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.since {
		longest = max(longest, now.Sub(t))
	}
	return len(b.since), longest
}

// LogDue reports whether a blocked request may log at now, and if so
// records that it did: the client's blocked-request log is rate-limited
// to one line per LogEvery.
func (b *Blocked) LogDue(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.logged.IsZero() && now.Sub(b.logged) < LogEvery {
		return false
	}
	b.logged = now
	return true
}
