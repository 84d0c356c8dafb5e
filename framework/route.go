package framework

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
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
	// watch is the feed of a watch's wait, nil for any other: its log
	// says why each endpoint cannot carry the watch (see
	// [watchFeed.watchWhy]), which a session at a version the topic
	// cannot travel at is, though ready for calls.
	watch *watchFeed
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
	return w.watch.watchWhy()
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
