package admit

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/identity"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/metrics"
	"github.com/lockstep-dev/lockstep/framework/internal/sessions"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Session is what admission reads and counts of a server's session
// record, which stays with the server: what the session table reads of it
// (its token, its contract and client instance, its owner, its peer's
// usage), and the rest below.
type Session interface {
	sessions.Record[*identity.Peer]
	// Contract and Version are the contract version the session agreed.
	Contract() string
	Version() string
	// Peer is the client instance the session was made for.
	Peer() handshake.Peer
	// AddCall adds n to the session's calls in flight and returns how
	// many it has then.
	AddCall(n int64) int64
	// Renew records that a request of the session was seen at now, on
	// the server's clock.
	Renew(now int64)
	// NoticeDrain records that an answer carrying the draining header
	// reached the session.
	NoticeDrain()
	// TakeResync reports whether the server asked the session's client to
	// resync since it last told it, and clears the request.
	TakeResync() bool
}

// Spec is what a new session record is made of ([Config.NewSession]).
type Spec struct {
	// Token names the session; "" for a session the table never holds
	// (a watch's, asked on behalf of a client component).
	Token string
	// Contract and Version are what the session agreed; Client the client
	// instance it is of.
	Contract, Version string
	Client            handshake.Peer
	// Owner is the peer that made it, Usage its share of the limits.
	Owner *identity.Peer
	Usage *limits.Usage
	// Now is its creation on the server's clock; it is seen then.
	Now int64
}

// Config is what a [Gate] reads of its server, set once before the
// server serves.
type Config[S Session] struct {
	// Component names the server in refusals.
	Component string
	// MTLS is the server's mutual TLS material; nil without mutual TLS,
	// when every peer is only what it claims.
	MTLS *identity.Credentials
	// Authorizer sees every entry (nil allows them all).
	Authorizer identity.Authorizer
	// Sessions holds the server's sessions, Limits its peers' counts.
	Sessions *sessions.Table[S, *identity.Peer]
	Limits   *limits.Peers
	// MaxInFlightPerSession, MaxBodyBytes and BodyReadTimeout are the
	// server's bounds (ServerConfig, Limits.BodyReadTimeout).
	MaxInFlightPerSession int
	MaxBodyBytes          int64
	BodyReadTimeout       time.Duration
	// Count counts a limit refusal; OnBehalf counts an entry asked on
	// behalf of a client component by kind, contract and outcome.
	Count    limits.Counter
	OnBehalf func(kind identity.EntryKind, contract, outcome string)
	// Logger logs what is asked on behalf of a client component, and at
	// debug level the sessions opened and the hellos refused.
	Logger *slog.Logger
	// Observer sees the server's calls (nil: nobody); Clock times them.
	Observer metrics.ServerObserver
	Clock    clockwork.Clock
	// Draining reports whether the server drains; Now reads the server's
	// clock, in nanoseconds since it started; Arrived records a call
	// arriving while it drains (the drain's quiet period starts again).
	Draining func() bool
	Now      func() int64
	Arrived  func()
	// BeginCall counts a call among the server's calls in flight, which
	// its drain waits for, until the returned end is called.
	BeginCall func() (end func())
	// Replayed reports whether the server holds the record of sess's call
	// keyed key, which it answers even while it drains.
	Replayed func(sess S, key string) bool
	// NewSession makes a session record; Token names a new session.
	NewSession func(Spec) S
	Token      func() string
	// Joined is told of a session that replaced none (nil: nobody); Lost
	// of a session a client closed.
	Joined func(S)
	Lost   func(S)

	// What a hello is answered from: the server as a welcome names it
	// (Self), the pace of its sessions (Heartbeat, TTL), how long a
	// refusal may be held at most (MaxHandshakeWait), what the server
	// serves of a contract to negotiate against (Serves: ok false when it
	// serves none; Draining is set here), and a channel closed when the
	// server starts draining, which releases held refusals.
	Self             handshake.Peer
	Heartbeat, TTL   time.Duration
	MaxHandshakeWait time.Duration
	Serves           func(contract string) (srv handshake.Server, ok bool)
	DrainStarted     <-chan struct{}
	// Holdable reports whether a refusal may change when the server is
	// replaced, so that a hello's ?wait= holds it (hello.Holdable, which
	// the client reads too).
	Holdable func(handshake.Reason) bool
	// WriterReports is what a heartbeat's answer says of the writers of
	// the topics of contracts.
	WriterReports func(contracts map[string]bool) []wire.TopicWriterReport
	// Intercept runs the server's interceptors around an entry other
	// than a call (a handshake, a heartbeat, a session close), which
	// final serves.
	Intercept func(ctx context.Context, c Call, final func(context.Context) (any, error)) (any, error)
}

// Call is an entry other than a call as the server's interceptors see it
// (the fields of framework.Call of the same names).
type Call struct {
	Kind     identity.EntryKind
	Contract string
	Header   http.Header
	Request  any
	Peer     handshake.Peer
}

// Gate admits a server's entries, by the rules of its [Config].
type Gate[S Session] struct{ cfg Config[S] }

// New returns the gate of a server configured by cfg.
func New[S Session](cfg Config[S]) *Gate[S] { return &Gate[S]{cfg: cfg} }

// Admitted is what the admission step found for an entry: its peer, its
// session (the zero S for a plain call), the usage its limits count
// against, and the context handlers run in (it carries the peer). Done
// ends what admission counted (calls in flight).
type Admitted[S Session] struct {
	Peer  *identity.Peer
	Sess  S
	Usage *limits.Usage
	Ctx   context.Context
	// OnBehalf is the client component a watch without a session is asked
	// on behalf of (admitWatchOnBehalf), "" otherwise.
	OnBehalf string
	// Draining says the server was draining when a plain call arrived: its
	// answer is marked so (a call in a session reads the server's state
	// when it answers).
	Draining bool
	undo     []func()
}

// Done ends what admission counted for the entry.
func (a *Admitted[S]) Done() {
	for i := len(a.undo) - 1; i >= 0; i-- {
		a.undo[i]()
	}
	a.undo = nil
}

// Entry says what the admission step checks for one request: what kind
// of entry it is, what its path names, and how it counts.
type Entry struct {
	Kind identity.EntryKind
	// Contract and Version are the path's; the session must be of the
	// contract, and (when Version is set) at the version.
	Contract, Version string
	// Topic names a watch's or topic write's topic, for the Authorizer.
	Topic string
	// Client is the contract's client component: a watch without a
	// session may be asked on its behalf (admitWatchOnBehalf).
	Client string
	// Call counts the entry as a call: refused while draining, counted in
	// flight (the server's, the session's, the peer's).
	Call bool
	// Authorize runs the Authorizer here; calls authorize each decoded
	// request instead (see identity.Authorizer).
	Authorize bool
}

// Admit is the one admission step of every request that reaches a
// handler after routing: a call and a multi-call, a batch (a call whose
// items each pass the Authorizer), a plain call (EntryPlain, no session:
// admitPlain), a topic write and a watch (with a session, or asked on
// behalf of e.Client without one: admitWatchOnBehalf). It checks, in the
// order of the package's doc, everything up to the body, which the entry
// then reads with [Gate.ReadBody]. On success the caller must call Done
// on the result when the entry ends; a refusal is answered with
// [Gate.Refuse]. Handshakes, heartbeats and session closes, which name no
// session in their path, are admitted by [Gate.Peer] and their own body
// rules. Machinery outside this package (a watch handler's) is given
// Admit as a func value, never a rule of its own: there is one admission
// path.
func (g *Gate[S]) Admit(r *http.Request, e Entry) (*Admitted[S], error) {
	switch {
	case e.Kind == identity.EntryPlain:
		return g.admitPlain(r)
	case e.Kind == identity.EntryWatch && r.Header.Get(protocol.HeaderOnBehalfOf) != "" && r.Header.Get(protocol.HeaderSession) == "":
		return g.admitWatchOnBehalf(r, e)
	}
	return g.admitSession(r, e)
}

// admitSession is the admission step of every entry that carries a session
// token (calls, multi-calls, topic writes, watches), up to the body: the
// header Lockstep-On-Behalf-Of (refused), draining, identity, session and
// its binding to the identity, version, rate, calls in flight, and
// authorization where e asks for it.
func (g *Gate[S]) admitSession(r *http.Request, e Entry) (*Admitted[S], error) {
	if err := RefuseOnBehalf(r); err != nil {
		return nil, err
	}
	a := &Admitted[S]{}
	token := r.Header.Get(protocol.HeaderSession)
	if e.Call {
		// Count the call before looking at draining, so a drain that
		// begins now either sees it in flight or sees it refused.
		a.undo = append(a.undo, g.cfg.BeginCall())
		if g.cfg.Draining() {
			if err := g.refuseDraining(r, token, e.Contract); err != nil {
				a.Done()
				return nil, err
			}
		}
	}
	peer, sess, err := g.bindSession(r, token, e.Contract)
	if err != nil {
		a.Done()
		return nil, err
	}
	if e.Version != "" && sess.Version() != e.Version {
		a.Done()
		return nil, apierror.Errorf(apierror.CodeIncompatiblePeer, "the session agreed %s %s, but the request is at %s", sess.Contract(), sess.Version(), e.Version)
	}
	if err := g.cfg.Limits.Allow(sess.Usage()); err != nil {
		a.Done()
		return nil, err
	}
	if e.Call {
		if err := g.countSessionCall(a, sess); err != nil {
			a.Done()
			return nil, err
		}
	}
	sess.Renew(g.cfg.Now())
	a.Peer, a.Sess, a.Usage, a.Ctx = peer, sess, sess.Usage(), identity.WithPeer(r.Context(), peer)
	if e.Authorize {
		if err := g.authorize(a.Ctx, &identity.Entry{Kind: e.Kind, Contract: e.Contract, Version: sess.Version(), Topic: e.Topic, Peer: peer}); err != nil {
			a.Done()
			return nil, err
		}
	}
	return a, nil
}

// bindSession finds a token's session and checks that it belongs to the
// requesting peer. Without mutual TLS, the session's own peer becomes the
// requester's identity (a claim, as before). contract, when not empty,
// must be the session's.
func (g *Gate[S]) bindSession(r *http.Request, token, contract string) (*identity.Peer, S, error) {
	var none S
	if token == "" {
		return nil, none, g.RoutingRefusal(r, apierror.Errorf(apierror.CodeHandshakeRequired, "the request carries no %s header: handshake first", protocol.HeaderSession))
	}
	sess := g.cfg.Sessions.Get(token)
	if sess == none || (contract != "" && sess.Contract() != contract) {
		return nil, none, g.RoutingRefusal(r, apierror.Errorf(apierror.CodeHandshakeRequired, "no such %s session (the server may have restarted): handshake again", contract))
	}
	p, err := g.authenticate(r, sess.Peer().Component)
	if err != nil {
		return nil, none, err
	}
	if !SameOwner(sess.Owner(), p) {
		return nil, none, apierror.Errorf(apierror.CodePermissionDenied, "the session belongs to another identity than %s", p.Identity)
	}
	p.Instance = sess.Peer().Instance
	if u := sess.Usage(); u != nil {
		identity.SetLimitsKey(p, u.Key)
	}
	return p, sess, nil
}

// RoutingRefusal is what a request refused before its identity was
// checked is told: err (an unknown path, contract, version, method or
// topic, or no session), or, under mutual TLS, unauthenticated if it
// carries no verified certificate. Such refusals come before admission,
// which needs what they look up; told to anyone, they would map what the
// server serves for whoever reaches its port.
func (g *Gate[S]) RoutingRefusal(r *http.Request, err error) error {
	if g.cfg.MTLS != nil {
		if _, aerr := g.authenticate(r, ""); aerr != nil {
			return aerr
		}
	}
	return err
}

// refuseDraining is a draining server's answer to a call in a session:
// refused unprocessed, unless it replays a key this server recorded,
// which is answered even while it drains: refusing it as not processed
// would let the client resend it elsewhere, though it may have been
// applied here.
func (g *Gate[S]) refuseDraining(r *http.Request, token, contract string) error {
	_, sess, err := g.bindSession(r, token, contract)
	key := r.Header.Get(protocol.HeaderIdempotencyKey)
	if err == nil && g.cfg.Replayed(sess, key) {
		return nil
	}
	g.cfg.Arrived()
	refusal := apierror.Errorf(apierror.CodeUnavailable, "%s is draining: resend to another endpoint", g.cfg.Component)
	if err != nil {
		return refusal
	}
	sess.NoticeDrain()
	if key != "" {
		// Said only here, where the record was looked up: the
		// client may then send the keyed call elsewhere.
		return unrecordedRefusal{refusal}
	}
	return refusal
}

// unrecordedRefusal is a draining server's refusal of a keyed call whose
// key it holds no record of; it is answered with Lockstep-Unrecorded (see
// [Gate.Refuse]).
type unrecordedRefusal struct{ err *apierror.Error }

func (u unrecordedRefusal) Error() string { return u.err.Error() }

// Unwrap gives the refusal's coded error.
func (u unrecordedRefusal) Unwrap() error { return u.err }

// countSessionCall counts an admitted call among its session's and its
// peer's calls in flight, within their limits.
func (g *Gate[S]) countSessionCall(a *Admitted[S], sess S) error {
	n := sess.AddCall(1)
	a.undo = append(a.undo, func() { sess.AddCall(-1) })
	if n > int64(g.cfg.MaxInFlightPerSession) {
		return limits.Refuse(g.cfg.Count, limits.InFlightPerSession, apierror.CodeResourceExhausted, "session has %d calls in flight, the limit is %d", n-1, g.cfg.MaxInFlightPerSession)
	}
	end, err := g.cfg.Limits.BeginCall(sess.Usage(), 1)
	if err != nil {
		return err
	}
	a.undo = append(a.undo, end)
	return nil
}

// admitPlain is the admission step of a plain call (Server.ServePlain),
// which has no session: counted in the drain's calls in flight (a plain
// call is served while the server drains: its caller has no other replica
// to be sent to), identity, rate and calls in flight of the peer, and the
// header Lockstep-On-Behalf-Of (refused). Under mutual TLS any verified
// certificate passes here (a plain caller is often not a lockstep
// component): the Authorizer decides what it may call, when it sees the
// decoded request.
func (g *Gate[S]) admitPlain(r *http.Request) (*Admitted[S], error) {
	a := &Admitted[S]{}
	a.undo = append(a.undo, g.cfg.BeginCall())
	if a.Draining = g.cfg.Draining(); a.Draining {
		g.cfg.Arrived()
	}
	p, usage, err := g.Peer(r)
	if err == nil {
		err = RefuseOnBehalf(r)
	}
	if err != nil {
		a.Done()
		return nil, err
	}
	end, err := g.cfg.Limits.BeginCall(usage, 1)
	if err != nil {
		a.Done()
		return nil, err
	}
	a.undo = append(a.undo, end)
	a.Peer, a.Usage, a.Ctx = p, usage, identity.WithPeer(r.Context(), p)
	return a, nil
}

// admitWatchOnBehalf admits a watch an operator's identity asks on behalf
// of the contract's client (e.Client), without a session (OnBehalfOf):
// identity and rate, charged to the operator's identity; the on-behalf
// rule; the Authorizer. Its watcher hangs on a session of its own that the
// session table never holds: nothing renews it, no readiness counts it
// (RequirePeers), it never lapses (the watch ends with its connection or
// the drain), it claims nothing, and its watchers count against the
// operator identity's shares. Refusals after the identity is known are
// audited here.
func (g *Gate[S]) admitWatchOnBehalf(r *http.Request, e Entry) (*Admitted[S], error) {
	p, u, err := g.Peer(r)
	if err != nil {
		return nil, err
	}
	behalf, err := g.OnBehalfOf(r, p, e.Client, true)
	if err == nil {
		if !p.Authenticated {
			p.Identity = identity.Identity{Component: behalf}
		}
		err = g.authorize(identity.WithPeer(r.Context(), p), &identity.Entry{Kind: e.Kind, Contract: e.Contract, Version: e.Version,
			Topic: e.Topic, Peer: p, OnBehalfOf: behalf})
	}
	if err != nil {
		g.AuditOnBehalf(Audit{Kind: e.Kind, Peer: p, Behalf: r.Header.Get(protocol.HeaderOnBehalfOf),
			Contract: e.Contract, Version: e.Version, Outcome: OutcomeLabel(err)})
		return nil, err
	}
	sess := g.cfg.NewSession(Spec{Contract: e.Contract, Version: e.Version, Now: g.cfg.Now(), Owner: p, Usage: u,
		Client: handshake.Peer{Component: behalf, Instance: "on behalf of " + p.Identity.String()}})
	return &Admitted[S]{Peer: p, Sess: sess, Usage: u, Ctx: identity.WithPeer(r.Context(), p), OnBehalf: behalf}, nil
}

// Peer is the admission step of the entries that name no session in
// their path (handshakes, heartbeats, session closes) up to the body:
// identity and rate. Without mutual TLS the peer's identity is filled in
// from what the body claims.
func (g *Gate[S]) Peer(r *http.Request) (*identity.Peer, *limits.Usage, error) {
	p, err := g.authenticate(r, "")
	if err != nil {
		return nil, nil, err
	}
	u := g.cfg.Limits.Usage(LimitsKey(p, r))
	if err := g.cfg.Limits.Allow(u); err != nil {
		return nil, nil, err
	}
	identity.SetLimitsKey(p, u.Key)
	return p, u, nil
}

// OwnSessions looks up the sessions a heartbeat or a session close names;
// every one the server holds must belong to the requesting peer
// (permission_denied otherwise, for the whole request: renewing or closing
// another identity's session is what a stolen token would be used for).
// Tokens the server does not hold are returned as zero entries.
func (g *Gate[S]) OwnSessions(p *identity.Peer, tokens []string) ([]S, error) {
	var none S
	out := make([]S, len(tokens))
	for i, token := range tokens {
		sess := g.cfg.Sessions.Get(token)
		if sess == none {
			continue
		}
		if !SameOwner(sess.Owner(), p) {
			return nil, apierror.Errorf(apierror.CodePermissionDenied, "a session named belongs to another identity than %s", p.Identity)
		}
		out[i] = sess
	}
	return out, nil
}
