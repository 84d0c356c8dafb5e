package framework

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/body"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// The admission step. Every entry a server takes (handshake, call,
// multi-call, topic write, watch, heartbeat, session close, status read)
// passes through it, in this order (docs/security.md lists it per kind):
//
//  1. draining: a call or topic write arriving at a draining server is
//     refused unprocessed with the draining header;
//  2. identity: under mutual TLS the client certificate is verified and the
//     identity it names read (unauthenticated otherwise);
//  3. session: the token is looked up and must belong to the same identity
//     (permission_denied otherwise: a token is no bearer credential);
//  4. authorization: the [Authorizer] sees the entry;
//  5. per-peer limits: rate, calls in flight, sessions and watchers;
//  6. body limits: a Content-Length over the limit is refused before
//     reading, the whole body must arrive within Limits.BodyReadTimeout, and
//     it must be valid UTF-8;
//
// then the entry is dispatched, wrapped by the interceptors.

// authenticate returns the request's peer. Under mutual TLS it is the
// identity of the verified client certificate (unauthenticated without
// one); otherwise the component the peer claims (claimed), unauthenticated.
func (s *Server) authenticate(r *http.Request, claimed string) (*Peer, error) {
	creds := s.cfg.MTLS
	if creds == nil {
		return &Peer{Identity: Identity{Component: claimed}}, nil
	}
	if r.TLS == nil {
		return nil, Errorf(CodeUnauthenticated, "mutual TLS is required")
	}
	return creds.verifyCached(r.TLS.PeerCertificates)
}

// checkClaim checks that an authenticated identity is the component its
// hello or session claims.
func checkClaim(p *Peer, claimed string) error {
	if p.Authenticated && p.Identity.Component != claimed {
		return Errorf(CodePermissionDenied, "the client certificate names %s, which may not speak as %q", p.Identity, claimed)
	}
	return nil
}

// onBehalfOf is the admission rule of the header Lockstep-On-Behalf-Of,
// the one exception to checkClaim: an operator's identity may ask on behalf
// of the client component claimed (a dry-run handshake's hello, a watch's
// contract client), where allowed (a dry run or a watch without a session;
// invalid_argument elsewhere), when its certificate names an operator
// (MTLSFiles.Operators; permission_denied otherwise) and the header names
// the component claimed (invalid_argument otherwise). Without mutual TLS
// nobody is authenticated and any peer may claim any component, so the
// header grants nothing a claim does not. It returns the component asked
// on behalf of, "" for a request without the header, which is held to
// checkClaim.
func (s *Server) onBehalfOf(r *http.Request, p *Peer, claimed string, allowed bool) (string, error) {
	behalf := r.Header.Get(protocol.HeaderOnBehalfOf)
	switch {
	case behalf == "":
		return "", checkClaim(p, claimed)
	case !allowed:
		return "", errOnBehalfNotAllowed()
	case p.Authenticated && !s.cfg.MTLS.isOperator(p.Identity):
		return "", Errorf(CodePermissionDenied, "%s is not an operator identity, so it may not ask on behalf of %q", p.Identity, behalf)
	case behalf != claimed:
		return "", Errorf(CodeInvalidArgument, "%s names %q, but the entry is %q's", protocol.HeaderOnBehalfOf, behalf, claimed)
	}
	return behalf, nil
}

// errOnBehalfNotAllowed is the refusal of the header Lockstep-On-Behalf-Of
// on an entry other than a dry-run handshake or a watch without a session.
func errOnBehalfNotAllowed() error {
	return Errorf(CodeInvalidArgument, "%s is for dry-run handshakes and watches without a session only", protocol.HeaderOnBehalfOf)
}

// refuseOnBehalf refuses the header Lockstep-On-Behalf-Of on the entries
// that may not carry it (calls, topic writes, watches with a session,
// heartbeats, session closes, plain-serving calls): ignored, it would let
// a client believe it was honoured.
func refuseOnBehalf(r *http.Request) error {
	if r.Header.Get(protocol.HeaderOnBehalfOf) != "" {
		return errOnBehalfNotAllowed()
	}
	return nil
}

// onBehalfAudit is one entry asked on behalf of a client component, as
// auditOnBehalf records it.
type onBehalfAudit struct {
	kind EntryKind
	// peer is who asked; behalf the client component asked for.
	peer   *Peer
	behalf string
	// contract and version name what was asked (version "" for a
	// handshake, which asks for none).
	contract, version string
	// outcome is "accepted", a refusal reason or an error code
	// (outcomeLabel).
	outcome string
}

// auditOnBehalf records an entry asked on behalf of a client component:
// one log line (who asked, for whom, what, the outcome) and the counter
// lockstep_on_behalf_total, whose labels come from what the server
// declares only.
func (s *Server) auditOnBehalf(a onBehalfAudit) {
	s.cfg.Logger.Info("lockstep: entry on behalf of a client component", "entry", a.kind, "identity", a.peer.Identity.String(),
		"onBehalfOf", a.behalf, "contract", a.contract, "version", a.version, "outcome", a.outcome)
	s.cfg.Metrics.onBehalfEntry(a.kind, a.contract, a.outcome)
}

// auditAdmitted records the outcome of an entry admitted on behalf of a
// client component (a watch without a session); it does nothing for any
// other entry.
func (s *Server) auditAdmitted(a *admitted, outcome string) {
	if a.onBehalf == "" {
		return
	}
	s.auditOnBehalf(onBehalfAudit{kind: EntryWatch, peer: a.peer, behalf: a.onBehalf, contract: a.sess.contract,
		version: a.sess.version, outcome: outcome})
}

// outcomeLabel is an entry's outcome as a label: "accepted" for none, else
// its refusal's reason or its code (reasonLabel).
func outcomeLabel(err error) string {
	if err == nil {
		return "accepted"
	}
	var r handshake.Refusal
	if e := asError(err); json.Unmarshal(e.Details(), &r) == nil && r.Reason != "" {
		return reasonLabel(string(r.Reason))
	}
	return reasonLabel(string(CodeOf(err)))
}

// bindSession finds a token's session and checks that it belongs to the
// requesting peer. Without mutual TLS, the session's own peer becomes the
// requester's identity (a claim, as before). contract, when not empty,
// must be the session's.
func (s *Server) bindSession(r *http.Request, token, contract string) (*Peer, *session, error) {
	if token == "" {
		return nil, nil, s.routingRefusal(r, Errorf(CodeHandshakeRequired, "the request carries no %s header: handshake first", protocol.HeaderSession))
	}
	sess := s.sessions.Get(token)
	if sess == nil || (contract != "" && sess.contract != contract) {
		return nil, nil, s.routingRefusal(r, Errorf(CodeHandshakeRequired, "no such %s session (the server may have restarted): handshake again", contract))
	}
	p, err := s.authenticate(r, sess.peer.Component)
	if err != nil {
		return nil, nil, err
	}
	if !sameOwner(sess.owner, p) {
		return nil, nil, Errorf(CodePermissionDenied, "the session belongs to another identity than %s", p.Identity)
	}
	p.Instance = sess.peer.Instance
	if sess.usage != nil {
		setLimitsKey(p, sess.usage.Key)
	}
	return p, sess, nil
}

// routingRefusal is what a request refused before its identity was
// checked is told: err (an unknown path, contract, version, method or
// topic, or no session), or, under mutual TLS, unauthenticated if it
// carries no verified certificate. Such refusals come before admission,
// which needs what they look up; told to anyone, they would map what the
// server serves for whoever reaches its port.
func (s *Server) routingRefusal(r *http.Request, err error) error {
	if s.cfg.MTLS != nil {
		if _, aerr := s.authenticate(r, ""); aerr != nil {
			return aerr
		}
	}
	return err
}

// sameOwner reports whether p may use a session made by owner: under
// mutual TLS only the identity that made it.
func sameOwner(owner, p *Peer) bool {
	if owner == nil || !owner.Authenticated {
		return !p.Authenticated
	}
	return p.Authenticated && owner.Identity == p.Identity
}

// readEntryBody reads a request body within the body limits
// (body.Read: MaxBodyBytes, Limits.BodyReadTimeout, valid UTF-8). A body
// that could not be read as valid is the client's fault
// (invalid_argument, payload_too_large or deadline_exceeded), never
// "unprocessed": a client must not resend garbage.
func (s *Server) readEntryBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), error) {
	return s.readEntryBodyLimit(w, r, s.cfg.MaxBodyBytes, limitBodyBytes)
}

// readEntryBodyLimit is readEntryBody with a lower limit of the entry's
// own (a hello's), counted as over which when it is the lower one.
func (s *Server) readEntryBodyLimit(w http.ResponseWriter, r *http.Request, maxBytes int64, which limit) ([]byte, func(), error) {
	if s.cfg.MaxBodyBytes < maxBytes {
		maxBytes, which = s.cfg.MaxBodyBytes, limitBodyBytes
	}
	b, release, err := body.Read(w, r, maxBytes, s.cfg.Limits.BodyReadTimeout)
	var tooLarge *body.TooLargeError
	switch {
	case err == nil:
		return b, release, nil
	case errors.As(err, &tooLarge):
		return nil, release, overLimit(s.cfg.Metrics, which, CodePayloadTooLarge, "%s", tooLarge.Error())
	case errors.Is(err, body.ErrTimeout):
		return nil, release, overLimit(s.cfg.Metrics, limitBodyReadTimeout, CodeDeadlineExceeded, "request body not received within %s", s.cfg.Limits.BodyReadTimeout)
	case errors.Is(err, body.ErrNotUTF8):
		return nil, release, Errorf(CodeInvalidArgument, "%s", err.Error())
	}
	return nil, release, Errorf(CodeInvalidArgument, "request body could not be read: %v", err)
}

// closeAfterRefusal makes the answer to a refusal that leaves r's body
// unread close the connection, gently (body.CloseAfterRefusal).
func (s *Server) closeAfterRefusal(w http.ResponseWriter, r *http.Request) {
	body.CloseAfterRefusal(w, r, s.cfg.Limits.BodyReadTimeout)
}

// bodyOnTheWire reports whether r's unread body may be on its way over
// an HTTP/1 connection (body.OnTheWire).
func bodyOnTheWire(r *http.Request) bool { return body.OnTheWire(r) }

// statusAllowed reports whether a request may read the status page, the
// metrics and a binary's own routes: anyone without mutual TLS (plain HTTP
// is loopback-only unless Insecure), only operator identities with it.
func (s *Server) statusAllowed(r *http.Request) (*Peer, error) {
	if s.cfg.MTLS == nil {
		return &Peer{}, nil
	}
	p, err := s.cfg.MTLS.operator(r)
	if err != nil {
		return nil, err
	}
	return p, s.authorize(withPeer(r.Context(), p), &Entry{Kind: EntryStatus, Peer: p})
}

// operatorOnly guards the status page and a binary's own routes: under
// mutual TLS only operator identities pass.
func (s *Server) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.statusAllowed(r)
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(withPeer(r.Context(), p)))
	})
}

// admitted is what the admission step found for an entry: its peer, its
// session (nil for a plain call), the usage its limits count against, and
// the context handlers run in (it carries the peer). done ends what
// admission counted (calls in flight).
type admitted struct {
	peer  *Peer
	sess  *session
	usage *peerUsage
	ctx   context.Context
	undo  []func()
	// onBehalf is the client component a watch without a session is asked
	// on behalf of (admitWatchOnBehalf), "" otherwise.
	onBehalf string
	// draining says the server was draining when a plain call arrived: its
	// answer is marked so (a call in a session reads the server's state
	// when it answers).
	draining bool
}

func (a *admitted) done() {
	for i := len(a.undo) - 1; i >= 0; i-- {
		a.undo[i]()
	}
	a.undo = nil
}

// entry says what the admission step checks for one request: what kind
// of entry it is, what its path names, and how it counts.
type entry struct {
	kind EntryKind
	// contract and version are the path's; the session must be of the
	// contract, and (when version is set) at the version.
	contract, version string
	// topic names a watch's or topic write's topic, for the Authorizer.
	topic string
	// client is the contract's client component: a watch without a
	// session may be asked on its behalf (admitWatchOnBehalf).
	client string
	// call counts the entry as a call: refused while draining, counted in
	// flight (the server's, the session's, the peer's).
	call bool
	// authorize runs the Authorizer here; calls authorize each decoded
	// request instead (see [Authorizer]).
	authorize bool
}

// admit is the one admission step of every request that reaches a handler
// after routing: a call and a multi-call (serveCall), a batch (a call
// whose items each pass the Authorizer), a plain call (EntryPlain, no
// session: admitPlain), a topic write and a watch (with a session, or
// asked on behalf of e.client without one: admitWatchOnBehalf). It checks,
// in the order at the top of this file, everything up to the body, which
// the entry then reads with readBody. On success the caller must call done
// on the result when the entry ends; a refusal is answered with
// [Server.refuse]. Handshakes, heartbeats and session closes, which name
// no session in their path, are admitted by admitPeer and their own body
// rules (server_handshake.go). Machinery outside the root package (a
// watch handler's) is given admit as a func value, never a rule of its
// own: there is one admission path.
func (s *Server) admit(r *http.Request, e entry) (*admitted, error) {
	switch {
	case e.kind == EntryPlain:
		return s.admitPlain(r)
	case e.kind == EntryWatch && r.Header.Get(protocol.HeaderOnBehalfOf) != "" && r.Header.Get(protocol.HeaderSession) == "":
		return s.admitWatchOnBehalf(r, e)
	}
	return s.admitSession(r, e)
}

// readBody reads an admitted entry's body within the body limits,
// counted among its peer's bodies on their way (readPeerBody), and
// answers a refusal itself: one before the body was read with
// [Server.refuse], a body refused by its limits with [Server.fail]. ok
// is false when it answered; otherwise the caller calls release once done
// with the body.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, a *admitted) (body []byte, release func(), ok bool) {
	body, release, refused, err := s.readPeerBody(w, r, a.usage)
	switch {
	case refused != nil:
		s.refuse(w, r, refused)
	case err != nil:
		s.fail(w, err)
	default:
		return body, release, true
	}
	return nil, nil, false
}

// admitSession is the admission step of every entry that carries a session
// token (calls, multi-calls, topic writes, watches), up to the body: the
// header Lockstep-On-Behalf-Of (refused), draining, identity, session and
// its binding to the identity, version, rate, calls in flight, and
// authorization where e asks for it.
func (s *Server) admitSession(r *http.Request, e entry) (*admitted, error) {
	if err := refuseOnBehalf(r); err != nil {
		return nil, err
	}
	a := &admitted{}
	token := r.Header.Get(protocol.HeaderSession)
	if e.call {
		// Count the call before looking at draining, so a drain that
		// begins now either sees it in flight or sees it refused.
		s.inFlight.Add(1)
		a.undo = append(a.undo, s.callEnded)
		if s.draining.Load() {
			if err := s.refuseDraining(r, token, e.contract); err != nil {
				a.done()
				return nil, err
			}
		}
	}
	peer, sess, err := s.bindSession(r, token, e.contract)
	if err != nil {
		a.done()
		return nil, err
	}
	if e.version != "" && sess.version != e.version {
		a.done()
		return nil, Errorf(CodeIncompatiblePeer, "the session agreed %s %s, but the request is at %s", sess.contract, sess.version, e.version)
	}
	if err := s.limits.Allow(sess.usage); err != nil {
		a.done()
		return nil, err
	}
	if e.call {
		if err := s.countSessionCall(a, sess); err != nil {
			a.done()
			return nil, err
		}
	}
	sess.lastSeen.Store(s.now())
	a.peer, a.sess, a.usage, a.ctx = peer, sess, sess.usage, withPeer(r.Context(), peer)
	if e.authorize {
		if err := s.authorize(a.ctx, &Entry{Kind: e.kind, Contract: e.contract, Version: sess.version, Topic: e.topic, Peer: peer}); err != nil {
			a.done()
			return nil, err
		}
	}
	return a, nil
}

// refuseDraining is a draining server's answer to a call in a session:
// refused unprocessed, unless it replays a key this server recorded,
// which is answered even while it drains: refusing it as not processed
// would let the client resend it elsewhere, though it may have been
// applied here.
func (s *Server) refuseDraining(r *http.Request, token, contract string) error {
	_, sess, err := s.bindSession(r, token, contract)
	key := r.Header.Get(protocol.HeaderIdempotencyKey)
	if err == nil && s.replays.Recorded(replayKeyOf(sess, key)) {
		return nil
	}
	s.lastArrival.Store(s.now())
	refusal := Errorf(CodeUnavailable, "%s is draining: resend to another endpoint", s.cfg.Component)
	if err != nil {
		return refusal
	}
	sess.drainNotified.Store(true)
	if key != "" {
		// Said only here, where the record was looked up: the
		// client may then send the keyed call elsewhere.
		return unrecordedRefusal{refusal}
	}
	return refusal
}

// countSessionCall counts an admitted call among its session's and its
// peer's calls in flight, within their limits.
func (s *Server) countSessionCall(a *admitted, sess *session) error {
	n := sess.inFlight.Add(1)
	a.undo = append(a.undo, func() { sess.inFlight.Add(-1) })
	if n > int64(s.cfg.MaxInFlightPerSession) {
		return overLimit(s.cfg.Metrics, limitInFlightPerSession, CodeResourceExhausted, "session has %d calls in flight, the limit is %d", n-1, s.cfg.MaxInFlightPerSession)
	}
	end, err := s.limits.BeginCall(sess.usage, 1)
	if err != nil {
		return err
	}
	a.undo = append(a.undo, end)
	return nil
}

// admitPlain is the admission step of a plain call ([Server.ServePlain]),
// which has no session: counted in the drain's calls in flight (a plain
// call is served while the server drains: its caller has no other replica
// to be sent to), identity, rate and calls in flight of the peer, and the
// header Lockstep-On-Behalf-Of (refused). Under mutual TLS any verified
// certificate passes here (a plain caller is often not a lockstep
// component): the Authorizer decides what it may call, when it sees the
// decoded request.
func (s *Server) admitPlain(r *http.Request) (*admitted, error) {
	a := &admitted{}
	s.inFlight.Add(1)
	a.undo = append(a.undo, s.callEnded)
	if a.draining = s.draining.Load(); a.draining {
		s.lastArrival.Store(s.now())
	}
	p, usage, err := s.admitPeer(r)
	if err == nil {
		err = refuseOnBehalf(r)
	}
	if err != nil {
		a.done()
		return nil, err
	}
	end, err := s.limits.BeginCall(usage, 1)
	if err != nil {
		a.done()
		return nil, err
	}
	a.undo = append(a.undo, end)
	a.peer, a.usage, a.ctx = p, usage, withPeer(r.Context(), p)
	return a, nil
}

// admitWatchOnBehalf admits a watch an operator's identity asks on behalf
// of the contract's client (e.client), without a session (onBehalfOf):
// identity and rate, charged to the operator's identity; the on-behalf
// rule; the Authorizer. Its watcher hangs on a session of its own that the
// session table never holds: nothing renews it, no readiness counts it
// (RequirePeers), it never lapses (the watch ends with its connection or
// the drain), it claims nothing, and its watchers count against the
// operator identity's shares. Refusals after the identity is known are
// audited here.
func (s *Server) admitWatchOnBehalf(r *http.Request, e entry) (*admitted, error) {
	p, u, err := s.admitPeer(r)
	if err != nil {
		return nil, err
	}
	behalf, err := s.onBehalfOf(r, p, e.client, true)
	if err == nil {
		if !p.Authenticated {
			p.Identity = Identity{Component: behalf}
		}
		err = s.authorize(withPeer(r.Context(), p), &Entry{Kind: EntryWatch, Contract: e.contract, Version: e.version,
			Topic: e.topic, Peer: p, OnBehalfOf: behalf})
	}
	if err != nil {
		s.auditOnBehalf(onBehalfAudit{kind: EntryWatch, peer: p, behalf: r.Header.Get(protocol.HeaderOnBehalfOf),
			contract: e.contract, version: e.version, outcome: outcomeLabel(err)})
		return nil, err
	}
	now := s.now()
	sess := &session{contract: e.contract, version: e.version, createdAt: now, owner: p, usage: u,
		peer: handshake.Peer{Component: behalf, Instance: "on behalf of " + p.Identity.String()}}
	sess.lastSeen.Store(now)
	return &admitted{peer: p, sess: sess, usage: u, ctx: withPeer(r.Context(), p), onBehalf: behalf}, nil
}

// admitPeer is the admission step of the entries that name no session in
// their path (handshakes, heartbeats, session closes) up to the body:
// identity and rate. Without mutual TLS the peer's identity is filled in
// from what the body claims.
func (s *Server) admitPeer(r *http.Request) (*Peer, *peerUsage, error) {
	p, err := s.authenticate(r, "")
	if err != nil {
		return nil, nil, err
	}
	u := s.limits.Usage(limitsKey(p, r))
	if err := s.limits.Allow(u); err != nil {
		return nil, nil, err
	}
	setLimitsKey(p, u.Key)
	return p, u, nil
}

// ownSessions looks up the sessions a heartbeat or a session close names;
// every one the server holds must belong to the requesting peer
// (permission_denied otherwise, for the whole request: renewing or closing
// another identity's session is what a stolen token would be used for).
// Tokens the server does not hold are returned as nil entries.
func (s *Server) ownSessions(p *Peer, tokens []string) ([]*session, error) {
	out := make([]*session, len(tokens))
	for i, token := range tokens {
		sess := s.sessions.Get(token)
		if sess == nil {
			continue
		}
		if !sameOwner(sess.owner, p) {
			return nil, Errorf(CodePermissionDenied, "a session named belongs to another identity than %s", p.Identity)
		}
		out[i] = sess
	}
	return out, nil
}

// intercept runs the server's interceptors around an entry other than a
// call (calls run them in their method's handler chain).
func (s *Server) intercept(ctx context.Context, call *Call, final CallFunc) (any, error) {
	if len(s.cfg.Interceptors) == 0 {
		return final(ctx, call)
	}
	return chain(s.cfg.Interceptors, final)(ctx, call)
}

// callChain is what a method's decoded request runs through, once per call,
// batch item and call of a multi-call: the Authorizer (which sees the
// request), then the interceptors, then the handler.
func (s *Server) callChain(final CallFunc) CallFunc {
	intercepted := chain(s.cfg.Interceptors, final)
	return func(ctx context.Context, call *Call) (any, error) {
		if call.Kind == "" {
			call.Kind = EntryCall
		}
		if s.cfg.Authorizer != nil {
			e := &Entry{Kind: call.Kind, Contract: call.Contract, Version: call.Version, Method: call.Method,
				Peer: PeerFromContext(ctx), Request: call.Request, Item: call.Item}
			if err := s.authorize(ctx, e); err != nil {
				return nil, err
			}
		}
		return intercepted(ctx, call)
	}
}

// batchItems is the bound on one batch call's items of a method:
// Limits.BatchItems, or the contract's lower maxItems.
func (s *Server) batchItems(c *Contract, method string) int {
	n := s.cfg.Limits.BatchItems
	if m, ok := c.Method(method); ok && m.MaxItems > 0 && m.MaxItems < n {
		n = m.MaxItems
	}
	return n
}

// writeJSON writes a 200-class answer with a JSON body.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", protocol.ContentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// refuse answers a request that never reached a handler with err in the
// one error shape: it carries Lockstep-Not-Processed, so the client may
// resend it anywhere. Every check before a handler runs (routing, session,
// draining, limits, admission) answers through refuse. Most of those
// checks come before the request body is read, so refuse settles the body
// first (settleUnreadBody): the peer reads the coded refusal, not a
// reset, and a keep-alive connection carries on or closes promptly; after
// a body was read (a handshake's hello) there is nothing left to settle.
// Refusals of the body itself (its limits, readEntryBody) answer through
// fail, having settled the connection their own way.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	body.Settle(w, r, s.cfg.Limits.BodyReadTimeout)
	w.Header().Set(protocol.HeaderNotProcessed, "1")
	if errors.As(err, new(unrecordedRefusal)) {
		w.Header().Set(protocol.HeaderUnrecorded, "1")
	}
	s.writeError(w, err)
}

// fail answers a request whose handler ran (or may have run) with err: no
// Lockstep-Not-Processed, so only an idempotent call may be resent. The
// body has been read, or refused by its limits, by then.
func (s *Server) fail(w http.ResponseWriter, err error) {
	s.writeError(w, err)
}

// writeError writes err in the one error shape, with its code's status,
// marking the answer draining when the server drains. Call it through
// [Server.refuse] or [Server.fail], which say whether a handler ran.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	e := asError(err)
	if ow, ok := w.(*observedWriter); ok {
		ow.code = e.Code()
	}
	body, mErr := json.Marshal(toWire(e))
	if mErr != nil {
		body = []byte(`{"code":"internal","message":"error did not encode"}`)
	}
	if s.draining.Load() {
		markDraining(w)
	}
	writeJSON(w, e.Code().HTTPStatus(), body)
}

// markDraining tells the client the server is draining, and closes the
// connection after this answer: no connection to a server that is going
// away returns to a client's pool, where a later call could meet it closed
// without knowing whether it was read.
func markDraining(w http.ResponseWriter) {
	h := w.Header()
	h.Set(protocol.HeaderDraining, "1")
	h.Set("Connection", "close")
}

// observedWriter remembers the code of the error written through it, for a
// server's observer.
type observedWriter struct {
	http.ResponseWriter
	code     Code
	contract string
	reason   handshake.Reason
	// call is the call answered through it, if any (observeAnswer).
	call callObservation
}

// Unwrap gives http.ResponseController the connection's writer, so the
// body read deadline (readEntryBody) reaches the connection through it.
func (w *observedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// callObservation is one call as the server's observer sees it: the names
// its path gave and when it began. Every call is observed through one,
// once: a call alone and a plain call through the writer that answers it
// (observeAnswer), each call of a multi-call on its own.
type callObservation struct {
	obs                       ServerObserver
	clock                     clockwork.Clock
	contract, version, method string
	start                     time.Time
}

// observeCall begins observing a call; without an observer the
// observation does nothing.
func (s *Server) observeCall(contract, version, method string) callObservation {
	if s.cfg.Observer == nil {
		return callObservation{}
	}
	return callObservation{obs: s.cfg.Observer, clock: s.cfg.Clock, contract: contract, version: version, method: method,
		start: s.cfg.Clock.Now()}
}

// end reports the call with its code ("" for success) and its time.
func (o callObservation) end(code Code) {
	if o.obs != nil {
		o.obs.Call(o.contract, o.version, o.method, code, o.clock.Since(o.start))
	}
}

// observeAnswer wraps w so that o ends with the code of the error written
// through it, when the returned writer's end is called; without an
// observer w is returned as it is, and the nil writer's end does nothing.
func (s *Server) observeAnswer(w http.ResponseWriter, o callObservation) (http.ResponseWriter, *observedWriter) {
	if o.obs == nil {
		return w, nil
	}
	ow := &observedWriter{ResponseWriter: w, call: o}
	return ow, ow
}

// end ends the observation of the call answered through w.
func (w *observedWriter) end() {
	if w != nil {
		w.call.end(w.code)
	}
}
