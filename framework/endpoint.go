package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/internal/clienthttp"
	"github.com/lockstep-dev/lockstep/framework/internal/hello"
	"github.com/lockstep-dev/lockstep/framework/internal/resend"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// endpointState is where an endpoint is in its life, and endpointMoves
// the one table of its moves: see package framework/internal/hello.
type endpointState = hello.State

const (
	stateConnecting  = hello.Connecting
	stateReady       = hello.Ready
	stateRefused     = hello.Refused
	stateUnreachable = hello.Unreachable
	stateDraining    = hello.Draining
	stateStopped     = hello.Stopped
)

var endpointMoves = hello.Moves

// clientSession is the client's half of a session with one endpoint.
type clientSession struct {
	token string
	// closed is set once the session has been closed on the server, so it
	// is closed only once.
	closed    atomic.Bool
	version   *peerVersion // the version agreed
	peer      handshake.Peer
	heartbeat time.Duration
	ttl       time.Duration
	// writers is what the server said of its topics' writers.
	writers sessionWriters
}

// Token is the session's token (resend.Session).
func (s *clientSession) Token() string { return s.token }

// Pinned reports whether the session is a pinned peer's, which has no
// handshake (resend.Session).
func (s *clientSession) Pinned() bool { return s.version.pinned }

// Peer is the server the session is with (resend.Session).
func (s *clientSession) Peer() handshake.Peer { return s.peer }

// endpoint is one replica of the peer. Its loop handshakes, heartbeats
// while the session lives, and handshakes again when it is lost; calls read
// its session without locks.
type endpoint struct {
	c      *Client
	url    string
	addr   string // url's dial address (host:port), the key of its prober
	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{} // wakes the loop when a call saw the session die
	// announced holds a token while the source has announced the endpoint
	// (ready again) since the loop last tried it: see announce.
	announced chan struct{}
	// notReady is what the source last said of the endpoint's readiness;
	// guarded by Client.mu.
	notReady bool
	// firstRound is closed once the first handshake has an outcome (or
	// the endpoint stopped before it had one); see [Client.firstRounds].
	firstRound     chan struct{}
	firstRoundOnce sync.Once

	sess     atomic.Pointer[clientSession] // routable session, or nil
	lastCall atomic.Int64                  // unix nanos of the last answered call
	// link is how the endpoint's requests reach it (resend.Link).
	link resend.Link

	// pinned is the version of a pinned peer, nil for a handshaking one.
	pinned *peerVersion

	batchMu sync.Mutex
	batch   *batcher // automatic batching of the current session

	// mu guards state, lastErr and agreed, and orders every change of
	// sess to nil with the change of state it goes with (see moveLocked).
	mu      sync.Mutex
	state   endpointState
	lastErr error
	agreed  *clientSession // last session, kept for status while not routable
}

func newEndpoint(c *Client, url string) *endpoint {
	ctx, cancel := context.WithCancel(c.ctx)
	e := &endpoint{c: c, url: url, addr: dialAddr(url), ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1),
		announced: make(chan struct{}, 1), firstRound: make(chan struct{}), state: stateConnecting}
	e.link = resend.Link{URL: url, HC: c.hc, Clock: c.cfg.Clock, MaxResponseBytes: c.cfg.MaxResponseBytes,
		LastCall: &e.lastCall, Resync: c.resync}
	return e
}

// endFirstRound marks the first handshake round over.
func (e *endpoint) endFirstRound() { e.firstRoundOnce.Do(func() { close(e.firstRound) }) }

func (e *endpoint) stop() { e.cancel() }

// probers returns the probers the client's endpoints wait on.
func (c *Client) probers() *probers {
	if c.cfg.probers != nil {
		return c.cfg.probers
	}
	return processProbers
}

// readyAgain reports whether a source's report announces an endpoint: it
// was not ready (e.notReady) and now is (ready). A report that changes
// nothing (the same set again, another endpoint's change) announces
// nothing, so a source that reports often costs no dials.
func (e *endpoint) readyAgain(ready bool) bool { return e.notReady && ready }

// announce tells the endpoint that its source says its server is back. An
// endpoint waiting for a listener is waiting on its address's prober: the
// prober dials once, at once, for every waiter of the process
// ([probe.Prober.Announce]), rather than each endpoint dialling on its own.
// An endpoint waiting out a backoff tries again at once. One between the
// two (handshaking) keeps the token and spends it on joining the prober.
func (e *endpoint) announce() {
	select {
	case e.announced <- struct{}{}:
	default:
	}
	if a := e.c.probers().Lookup(e.addr); a != nil {
		a.Announce()
	}
}

func (e *endpoint) routable() bool { return e.sess.Load() != nil }

func (e *endpoint) routableSession() *clientSession { return e.sess.Load() }

// Link is how the endpoint's requests reach it (resend.Endpoint).
func (e *endpoint) Link() *resend.Link { return &e.link }

// Routable is the endpoint's routable session, or nil (resend.Endpoint).
func (e *endpoint) Routable() resend.Session {
	if s := e.sess.Load(); s != nil {
		return s
	}
	return nil
}

// State is the endpoint's state now (resend.Endpoint).
func (e *endpoint) State() endpointState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Stopped reports whether the endpoint has stopped (resend.Endpoint).
func (e *endpoint) Stopped() bool { return e.ctx.Err() != nil }

// Lose is [endpoint.lose] for the request path (resend.Endpoint).
func (e *endpoint) Lose(s resend.Session, state endpointState, err error) {
	e.lose(s.(*clientSession), state, err)
}

func (e *endpoint) status() EndpointStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := EndpointStatus{URL: e.url, State: string(e.state)}
	if e.agreed != nil {
		st.Version = e.agreed.version.contract.Version()
		st.Peer = e.agreed.peer
	}
	if e.lastErr != nil && e.state != stateReady {
		st.Error = e.lastErr.Error()
	}
	return st
}

// moveLocked moves the endpoint to state to, which must be one of
// endpointMoves[e.state], with err as the reason it is not ready (nil for
// none). e.mu must be held. A session leaves e.sess under e.mu, in the
// same hold as the move that goes with it, so that e.sess is set only in
// stateReady: a session lost (by a call or a heartbeat) moves the
// endpoint out of ready and no other state, and a lost session reports
// the state it was lost in.
func (e *endpoint) moveLocked(to endpointState, err error) {
	if !slices.Contains(endpointMoves[e.state], to) {
		panic(fmt.Sprintf("lockstep: endpoint %s cannot move from %s to %s", e.url, e.state, to))
	}
	e.state, e.lastErr = to, err
}

// setState records the endpoint's state and, when routability changes,
// tells the client.
func (e *endpoint) setState(state endpointState, sess *clientSession, err error) {
	e.mu.Lock()
	e.moveLocked(state, err)
	newInstance := false
	if sess != nil {
		newInstance = e.agreed != nil && e.agreed.peer.Instance != sess.peer.Instance
		e.agreed = sess
	}
	var old *clientSession
	if state != stateReady {
		old = e.sess.Swap(nil)
	}
	e.mu.Unlock()
	if state != stateReady {
		if old != nil {
			e.c.stateChanged()
		}
		return
	}
	if newInstance {
		// Another server instance now answers at this URL (a restart at the
		// same address, a Service's new backend). Pooled connections may
		// still lead to the old process, closing as it exits: a call written
		// into one fails with no way to know whether it was read. Drop them
		// before the first call of the new session.
		e.c.hc.CloseIdleConnections()
	}
	// Only this endpoint's loop makes it ready (a pinned endpoint is made
	// ready once, by readyPinned, before its loop starts), and nothing else
	// stores a session, so none can be lost before it is stored.
	if old := e.sess.Swap(sess); old != sess {
		e.c.stateChanged()
	}
}

// lose takes sess out of routing because a call or heartbeat saw it fail,
// and wakes the loop to handshake again. A newer session is left alone.
func (e *endpoint) lose(sess *clientSession, state endpointState, err error) {
	e.mu.Lock()
	if !e.sess.CompareAndSwap(sess, nil) {
		e.mu.Unlock()
		return
	}
	e.moveLocked(state, err)
	e.mu.Unlock()
	if state == stateUnreachable {
		// The server is gone: drop pooled connections now, so no later
		// call meets one it closed. Go's transport can only drop them all,
		// those to other endpoints too. Not for a draining server: it
		// answers every request on a pooled connection (a refusal, not
		// processed, or its 408, on which the transport drops the
		// connection), so its connections need no dropping, and other
		// endpoints' idle connections stay pooled.
		e.c.hc.CloseIdleConnections()
	}
	e.c.stateChanged()
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// loop is the endpoint's loop (hello.Loop): its hellos, the session it
// keeps alive and the waits between them.
func (e *endpoint) loop() *hello.Loop[*clientSession] {
	cfg := &e.c.cfg
	l := &hello.Loop[*clientSession]{Ctx: e.ctx, Clock: cfg.Clock, Backoff: cfg.Backoff, Kick: e.kick, Announced: e.announced,
		Hello: e.handshake, KeepAlive: e.keepAlive, Lose: e.lose, Close: e.closeSession,
		Move: func(state endpointState, sess *clientSession, err error) {
			e.setState(state, sess, err)
			e.endFirstRound()
		},
		WaitListening: func() { e.c.probers().At(e.addr).WaitListening(e.ctx, e.kick, e.announced, cfg.Backoff) },
	}
	if obs := cfg.Observer; obs != nil {
		l.Observe = func(h handshakeResult) {
			outcome, reason := h.Outcome()
			obs.Handshake(e.c.contract.Name(), e.url, outcome, reason)
		}
	}
	return l
}

// handshakeResult is what one hello came to (see package
// framework/internal/hello).
type handshakeResult = hello.Result[*clientSession]

// handshake sends a hello and checks the answer. With wait, a refusal for
// incompatible versions is held open by the server until it drains.
func (e *endpoint) handshake(wait bool) handshakeResult {
	cfg := &e.c.cfg
	var held string
	if wait {
		held = cfg.HandshakeWait.String()
	}
	w, h := hello.Ask[*clientSession](e.ctx, hello.Server{URL: e.url, HC: e.c.hc, Limit: cfg.MaxResponseBytes}, handshake.Hello{
		Contract: e.c.contract.Name(), Component: cfg.Component, Instance: cfg.Instance,
		Release: cfg.Release, Offers: e.c.offers, PeerRelease: cfg.PeerRelease,
	}, held)
	if h.State != stateReady {
		return h
	}
	if r := handshake.CheckWelcome(e.c.contract.Name(), cfg.Component, e.c.offers, cfg.PeerRelease, w); r != nil {
		e.closeSession(&clientSession{token: w.Session})
		return handshakeResult{State: stateRefused, Err: hello.RejectedWelcome{Err: NewError(CodeIncompatiblePeer, r).WithDetails(r)},
			Refusal: r, Rejected: true}
	}
	v := e.c.versionOf(w.Version)
	if v == nil {
		return hello.Failed[*clientSession](stateRefused, Errorf(CodeIncompatiblePeer, "%s agreed version %s, which was not offered", e.url, w.Version))
	}
	return handshakeResult{State: stateReady, Sess: &clientSession{
		token: w.Session, version: v, peer: w.Peer,
		heartbeat: time.Duration(w.Heartbeat), ttl: time.Duration(w.TTL),
	}}
}

// versionOf returns the offered version a welcome agreed on.
func (c *Client) versionOf(ver string) *peerVersion {
	if v, ok := c.versions[ver]; ok {
		return v
	}
	for _, v := range c.versions {
		if handshake.SameVersion(v.contract.Version(), ver) {
			return v
		}
	}
	return nil
}

// keepAlive hands sess to the client's heartbeat sender and waits until the
// session is lost (returning the state to report) or the endpoint stops.
func (e *endpoint) keepAlive(sess *clientSession) (endpointState, error) {
	e.c.beats.add(e, sess)
	defer e.c.beats.remove(e, sess)
	for {
		select {
		case <-e.ctx.Done():
			return stateStopped, nil
		case <-e.kick:
			if e.sess.Load() != sess {
				e.mu.Lock()
				state, err := e.state, e.lastErr
				e.mu.Unlock()
				return state, err
			}
		}
	}
}

// closeSession tells the server a session is over, briefly and best effort,
// once.
func (e *endpoint) closeSession(sess *clientSession) {
	if sess.closed.Swap(true) {
		return
	}
	clienthttp.DeleteSessions(e.c.hc, e.url, []string{sess.token})
}

// send sends one attempt of r to e through sess ([resend.Target.Send]).
func (e *endpoint) send(ctx context.Context, sess *clientSession, r resend.Request) resend.Attempt {
	return resend.Target{E: e, S: sess}.Send(ctx, r)
}

// settle applies the resend rules to what one attempt at e through sess
// got ([resend.Target.Settle]).
func (e *endpoint) settle(ctx context.Context, sess *clientSession, a resend.Attempt, safety resend.Safety, what string) (resend.Decision, *Error) {
	return resend.Target{E: e, S: sess}.Settle(ctx, a, safety, what)
}

// callURL is where a call goes: the lockstep path, or for a pinned peer the
// method's path under the peer's URL (its own, else the declared one).
func (e *endpoint) callURL(sess *clientSession, method string) string {
	c := sess.version.contract
	if sess.version.pinned {
		path := sess.version.paths[method]
		if decl, ok := c.Method(method); ok && path == "" {
			path = decl.Path
		}
		if path != "" {
			return e.url + "/" + strings.TrimPrefix(path, "/")
		}
	}
	return e.url + protocol.CallPath(c.Name(), c.Version(), method)
}

// PinnedPeer is an external server that does not handshake, such as a
// Kubernetes scheduler extender: the client calls it at Version, at each
// method's declared path under URL, sends that version's JSON, and validates
// every answer against that version's schemas.
type PinnedPeer struct {
	// URL is the peer's base URL; a method with path "filter" is called at
	// URL + "/filter".
	URL string
	// Version is the contract version the peer speaks.
	Version string
	// Paths, by method name, override the paths the contract declares for
	// this peer alone: a Kubernetes scheduler configuration names an
	// extender's verbs (filterVerb: "filter-by-zone"), and each extender
	// chooses its own. A path is joined to URL as a declared one is.
	Paths map[string]string
}

// addPinned adds a pinned endpoint; it is routable at once and stays in the
// set whatever the endpoint source reports.
func (c *Client) addPinned(url string, v *peerVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	base := strings.TrimRight(url, "/")
	e := newEndpoint(c, base)
	e.pinned = v
	sess := &clientSession{version: v}
	e.readyPinned(sess)
	e.endFirstRound() // routable from the start: there is no handshake
	c.endpoints[base] = e
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if hold := c.cfg.holdPinnedLoops; hold != nil {
			select {
			case <-hold:
			case <-e.ctx.Done():
			}
		}
		e.loop().RunPinned(sess, e.routableSession)
	}()
	c.rebuildLocked()
}

// readyPinned makes a new pinned endpoint routable with its one session,
// before the client routes to it. Its loop only makes it routable again
// after a failed connection: were the first move the loop's, a call made
// before the loop first ran (a FailFast call, which does not wait) would
// find no endpoint and fail unavailable, however the peer would have
// answered it.
func (e *endpoint) readyPinned(sess *clientSession) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.moveLocked(stateReady, nil)
	e.agreed = sess
	e.sess.Store(sess)
}
