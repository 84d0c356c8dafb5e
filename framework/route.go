package framework

import (
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/hello"
	"github.com/lockstep-dev/lockstep/framework/internal/route"
)

// routeWait is the one wait for a routable endpoint of one request (see
// package framework/internal/route).
type routeWait = route.Wait

// newCallWait returns the wait of one caller's request.
func (c *Client) newCallWait(failFast bool) *routeWait {
	return &routeWait{Client: &c.waits, FailFast: failFast, Timeout: c.cfg.ReadyTimeout, Counted: true, FreeResends: 3}
}

// initWaits gives the client's waits what they read of it.
func (c *Client) initWaits() {
	c.waits = route.Client{
		Clock: c.cfg.Clock, Life: c.ctx, Delay: c.cfg.Backoff.Delay, Changed: c.changedCh, FirstRounds: c.firstRounds,
		NoPeer:    func() error { return c.blockedError(CodeUnavailable) },
		PeerState: func() error { return c.peerState() },
		Log:       c.logBlocked, Calls: &c.blocked,
	}
	if obs := c.cfg.Observer; obs != nil {
		c.waits.Observe = func(d time.Duration) { obs.Blocked(c.contract.Name(), d) }
	}
}

// logBlocked logs, rate-limited (see route.Blocked.LogDue), that a request (what: "call
// nodestatus ReportStatus", "watch NodeHealth") has waited since since
// without a compatible peer, and why: each endpoint's state, and for a
// refusal who refused, for which reason, and which versions each side
// offered. A request with an account of its own gives it as why (a watch
// says which version each session agreed and why the topic cannot
// travel at it); "" is the client's peer state.
func (c *Client) logBlocked(what string, since time.Time, why string) {
	now := c.cfg.Clock.Now()
	if !c.blocked.LogDue(now) {
		return
	}
	if why == "" {
		why = c.peerState().why
	}
	n, longest := c.blocked.Snapshot(now)
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

// why says in a few words why e carries no request now (see hello.Why).
func (e *endpoint) why() string {
	e.mu.Lock()
	state, err := e.state, e.lastErr
	e.mu.Unlock()
	return hello.Why(e.url, state, err)
}
