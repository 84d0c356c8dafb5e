package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/internal/admit"
	hellos "github.com/lockstep-dev/lockstep/framework/internal/hello"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// serveHandshake answers POST /lockstep/handshake: a welcome with a new
// session, or a coded refusal. With ?wait=<duration>, a refusal for
// incompatible versions is held until the server starts draining or the
// wait ends, so a client learns of this server's replacement at once. With
// ?dryRun=1 the server answers what it would answer now, but opens no
// session and holds nothing (see answerDryRun).
func (s *Server) serveHandshake(w http.ResponseWriter, r *http.Request) {
	dryRun := r.URL.Query().Get(protocol.QueryDryRun) == "1"
	if !dryRun {
		var observed func()
		w, observed = s.observeHandshake(w)
		defer observed()
	}
	// Admission (docs/security.md): identity and rate, then the hello
	// (within the body limits, decoded strictly), then the claim, the
	// Authorizer, and at the session's creation its caps and ownership.
	peer, usage, err := s.gate.Peer(r)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	if r.Header.Get(protocol.HeaderOnBehalfOf) != "" {
		// Audited whatever its outcome, which the writer records.
		ow, ok := w.(*admit.ObservedWriter)
		if !ok {
			ow = &admit.ObservedWriter{ResponseWriter: w}
			w = ow
		}
		defer func() {
			outcome := "accepted"
			switch {
			case ow.Reason != "":
				outcome = reasonLabel(string(ow.Reason))
			case ow.Code != "":
				outcome = reasonLabel(string(ow.Code))
			}
			s.gate.AuditOnBehalf(admit.Audit{Kind: EntryHandshake, Peer: peer, Behalf: r.Header.Get(protocol.HeaderOnBehalfOf),
				Contract: ow.Contract, Outcome: outcome})
		}()
	}
	endRead, err := s.beginPeerBody(usage)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	hello, wait, err := s.readHello(w, r)
	endRead()
	if err != nil {
		s.fail(w, err)
		return
	}
	if ow, ok := w.(*admit.ObservedWriter); ok {
		ow.Contract = hello.Contract
	}
	ctx, sc, behalf, err := s.admitHello(r, peer, &hello, dryRun)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	call := &Call{Kind: EntryHandshake, Contract: hello.Contract, Header: r.Header, Request: &hello,
		Peer: handshake.Peer{Component: hello.Component, Instance: hello.Instance, Release: hello.Release}}
	h := &admittedHello{w: w, r: r, sc: sc, hello: hello, peer: peer, usage: usage, wait: wait, dryRun: dryRun}
	out, err := s.intercept(ctx, call, func(ctx context.Context, call *Call) (any, error) {
		if behalf != "" {
			// Asked for a new instance of the component: no usage of
			// the operator's is checked (see answerDryRun).
			h.usage = nil
			agreement, refusal := s.negotiate(sc, hello)
			s.answerDryRun(h, agreement, refusal)
			return nil, nil
		}
		return s.handshake(ctx, h)
	})
	switch {
	case err != nil:
		s.refuse(w, r, err)
	case out != nil:
		writeJSON(w, http.StatusOK, out.([]byte))
	}
}

// observeHandshake wraps w so that the server's observer counts the
// handshake by outcome (welcome, refused with a reason, error with a code)
// once observed is called; w is returned as it is without an observer.
func (s *Server) observeHandshake(w http.ResponseWriter) (_ http.ResponseWriter, observed func()) {
	obs := s.cfg.Observer
	if obs == nil {
		return w, func() {}
	}
	ow := &admit.ObservedWriter{ResponseWriter: w}
	return ow, func() {
		outcome, reason := "welcome", ""
		switch {
		case ow.Reason != "":
			outcome, reason = "refused", string(ow.Reason)
		case ow.Code != "":
			outcome, reason = "error", string(ow.Code)
		}
		obs.Handshake(ow.Contract, outcome, reason)
	}
}

// readHello reads and strictly decodes a handshake's hello within the
// body limits, and its ?wait=, capped at MaxHandshakeWait. Its errors are
// answered with fail: the body has been read.
func (s *Server) readHello(w http.ResponseWriter, r *http.Request) (handshake.Hello, time.Duration, error) {
	body, release, err := s.gate.ReadBodyLimit(w, r, handshake.MaxHelloBytes, limitHelloBytes)
	if err != nil {
		return handshake.Hello{}, 0, err
	}
	hello, err := handshake.DecodeHello(body)
	release()
	if err != nil {
		switch {
		case errors.Is(err, handshake.ErrNameTooLong):
			s.cfg.Metrics.limitRefused(limitNameBytes)
		case errors.Is(err, handshake.ErrTooManyOffers):
			s.cfg.Metrics.limitRefused(limitOffers)
		}
		return handshake.Hello{}, 0, Errorf(CodeInvalidArgument, "hello: %v", err)
	}
	var wait time.Duration
	if q := r.URL.Query().Get("wait"); q != "" {
		wait, err = time.ParseDuration(q)
		if err != nil || wait < 0 {
			return handshake.Hello{}, 0, Errorf(CodeInvalidArgument, "wait=%q is not a duration such as 30s", q)
		}
		wait = min(wait, s.cfg.MaxHandshakeWait)
	}
	return hello, wait, nil
}

// admitHello is the admission of a decoded hello: the component it claims
// must be the authenticated peer's (which, without mutual TLS, it becomes),
// unless an operator asks a dry run on its behalf (onBehalfOf), the
// contract must be served here, and the Authorizer must allow it. It
// returns the request's context carrying the peer, the contract, and the
// component asked on behalf of ("" for none).
func (s *Server) admitHello(r *http.Request, peer *Peer, hello *handshake.Hello, dryRun bool) (context.Context, *servedContract, string, error) {
	behalf, err := s.gate.OnBehalfOf(r, peer, hello.Component, dryRun)
	if err != nil {
		return nil, nil, "", err
	}
	if !peer.Authenticated {
		peer.Identity = Identity{Component: hello.Component}
	}
	if behalf == "" {
		peer.Instance = hello.Instance
	}
	sc := s.lookup(hello.Contract)
	if sc == nil {
		return nil, nil, "", Errorf(CodeNotFound, "%s does not serve contract %q", s.cfg.Component, hello.Contract)
	}
	ctx := withPeer(r.Context(), peer)
	if err := s.authorize(ctx, &Entry{Kind: EntryHandshake, Contract: hello.Contract, Peer: peer, Hello: hello, OnBehalfOf: behalf}); err != nil {
		return nil, nil, "", err
	}
	return ctx, sc, behalf, nil
}

// admittedHello is a hello that passed admission, and what answering it
// needs.
type admittedHello struct {
	w     http.ResponseWriter
	r     *http.Request
	sc    *servedContract
	hello handshake.Hello
	peer  *Peer
	// usage is the peer's share of the limits; nil for a dry run asked on
	// behalf of a client component.
	usage *peerUsage
	// wait is how long a refusal that may change may be held (?wait=).
	wait time.Duration
	// dryRun: answer what a handshake would get, open nothing.
	dryRun bool
}

// handshake negotiates a hello that passed admission and opens its
// session, returning the welcome; a dry run answers itself and returns nil.
func (s *Server) handshake(ctx context.Context, h *admittedHello) (any, error) {
	w, sc, hello, peer, usage, wait := h.w, h.sc, h.hello, h.peer, h.usage, h.wait
	agreement, refusal := s.negotiate(sc, hello)
	if h.dryRun {
		s.answerDryRun(h, agreement, refusal)
		return nil, nil
	}
	if refusal != nil && wait > 0 && hellos.Holdable(refusal.Reason) {
		// Held, a refusal keeps a goroutine and a connection for up to
		// MaxHandshakeWait: it counts as a call in flight of its peer, so
		// that a peer cannot hold more than Limits.InFlightPerPeer of
		// them; beyond that it is answered at once, as without ?wait=.
		if end, _ := s.limits.TryBeginCall(usage, 1); end != nil {
			t := s.cfg.Clock.NewTimer(wait)
			select {
			case <-s.drainCh:
				agreement, refusal = s.negotiate(sc, hello)
			case <-t.Chan():
			case <-ctx.Done():
			}
			t.Stop()
			end()
			if ctx.Err() != nil {
				return nil, nil
			}
		}
	}
	if refusal != nil {
		if ow, ok := w.(*admit.ObservedWriter); ok {
			ow.Reason = refusal.Reason
		}
		if s.cfg.Logger.Enabled(ctx, slog.LevelDebug) { // no arguments boxed when debug is off
			s.cfg.Logger.Debug("lockstep: hello refused", "contract", hello.Contract, "reason", refusal.Reason,
				"peer", hello.Component, "instance", hello.Instance)
		}
		return nil, NewError(Code(refusal.Code), refusal).WithDetails(refusal)
	}
	sv := sc.versions[agreement.Version]
	now := s.now()
	sess := &session{
		token:     randomID(16),
		contract:  hello.Contract,
		version:   sv.contract.Version(),
		peer:      handshake.Peer{Component: hello.Component, Instance: hello.Instance, Release: hello.Release},
		createdAt: now,
		owner:     peer,
		usage:     usage,
	}
	sess.lastSeen.Store(now)
	replaced, err := s.sessions.Put(sess)
	if err != nil {
		return nil, err
	}
	if replaced == nil && s.cfg.OnPeerJoined != nil {
		s.cfg.OnPeerJoined(s.info(sess))
	}
	s.cfg.Logger.Debug("lockstep: session opened", "contract", hello.Contract, "version", sess.version,
		"peer", hello.Component, "instance", hello.Instance, "identity", peer.Identity.String())
	welcome, _ := json.Marshal(handshake.Welcome{
		Session:     sess.token,
		Version:     sess.version,
		Fingerprint: agreement.Fingerprint,
		Peer:        handshake.Peer{Component: s.cfg.Component, Instance: s.cfg.Instance, Release: s.cfg.Release},
		Heartbeat:   handshake.Duration(s.cfg.Heartbeat),
		TTL:         handshake.Duration(s.cfg.SessionTTL),
	})
	return welcome, nil
}

// answerDryRun answers a dry-run handshake, which an operator's tool sends to
// ask whether a client would be accepted: the refusal a real handshake would
// get now, or a welcome without a session. It creates no session, fires no
// peer hooks and is not counted as a handshake, so asking cannot disturb
// the peers the server serves. h.usage is nil for a dry run asked on behalf
// of a client component: it asks whether a new instance of that component
// would be admitted, so the session bound is checked for a new peer, not
// for the operator asking.
func (s *Server) answerDryRun(h *admittedHello, agreement handshake.Agreement, refusal *handshake.Refusal) {
	w, r, hello, peer, usage := h.w, h.r, h.hello, h.peer, h.usage
	if refusal != nil {
		if ow, ok := w.(*admit.ObservedWriter); ok {
			ow.Reason = refusal.Reason
		}
		s.refuse(w, r, NewError(Code(refusal.Code), refusal).WithDetails(refusal))
		return
	}
	if usage == nil {
		if err := s.sessions.CheckNew(); err != nil {
			s.refuse(w, r, err)
			return
		}
	} else if err := s.sessions.Check(usage, peer, sessionKey(hello.Contract, hello.Instance)); err != nil {
		s.refuse(w, r, err)
		return
	}
	welcome, _ := json.Marshal(handshake.Welcome{
		Version:     agreement.Version,
		Fingerprint: agreement.Fingerprint,
		Peer:        handshake.Peer{Component: s.cfg.Component, Instance: s.cfg.Instance, Release: s.cfg.Release},
		Heartbeat:   handshake.Duration(s.cfg.Heartbeat),
		TTL:         handshake.Duration(s.cfg.SessionTTL),
	})
	writeJSON(w, http.StatusOK, welcome)
}

func (s *Server) negotiate(sc *servedContract, hello handshake.Hello) (handshake.Agreement, *handshake.Refusal) {
	var client string
	for _, sv := range sc.versions {
		client = sv.contract.Client()
	}
	return handshake.Negotiate(handshake.Server{
		Contract:    sc.name,
		Component:   s.cfg.Component,
		Client:      client,
		Release:     s.cfg.Release,
		Offers:      sc.offers(),
		PeerRelease: s.cfg.PeerRelease[sc.name],
		Draining:    s.draining.Load(),
	}, hello)
}

// serveCloseSession answers DELETE /lockstep/session: the sessions named,
// in the session header or as {"sessions":[…]} in the body, are closed.
// Closing an unknown session succeeds, so the call is idempotent. A client
// closes its sessions with a draining server once it has stopped sending
// calls there; the drain waits for that.
func (s *Server) serveCloseSession(w http.ResponseWriter, r *http.Request) {
	p, tokens, sessions, ok := s.admitSessions(w, r, EntrySessionClose, false)
	if !ok {
		return
	}
	_, err := s.intercept(withPeer(r.Context(), p), &Call{Kind: EntrySessionClose, Header: r.Header, Request: tokens},
		func(context.Context, *Call) (any, error) {
			for _, sess := range sessions {
				if sess == nil {
					continue
				}
				sess.drainNotified.Store(true)
				if s.sessions.Remove(sess) {
					s.peerLost(sess)
				}
			}
			return nil, nil
		})
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	if s.draining.Load() {
		s.lastArrival.Store(s.now())
		markDraining(w)
	}
	w.WriteHeader(http.StatusNoContent)
}

// admitSessions is the admission step of a heartbeat and a session close:
// identity, rate, the body (one session in the session header, or
// {"sessions":[…]}, which only a heartbeat requires), every session named
// the peer's own, and the Authorizer. It returns the sessions named (nil
// for a token the server does not hold) beside their tokens; a refusal is
// answered here, and ok is false.
func (s *Server) admitSessions(w http.ResponseWriter, r *http.Request, kind EntryKind, bodyRequired bool) (*Peer, []string, []*session, bool) {
	p, usage, err := s.gate.Peer(r)
	if err == nil {
		err = admit.RefuseOnBehalf(r)
	}
	if err != nil {
		s.refuse(w, r, err)
		return nil, nil, nil, false
	}
	var tokens []string
	switch token := r.Header.Get(protocol.HeaderSession); {
	case token != "":
		tokens = []string{token}
	case !bodyRequired && r.ContentLength == 0:
	default:
		body, release, refused, err := s.gate.ReadPeerBody(w, r, usage)
		if refused != nil {
			s.refuse(w, r, refused)
			return nil, nil, nil, false
		}
		if err != nil {
			s.fail(w, err)
			return nil, nil, nil, false
		}
		if len(bytes.TrimSpace(body)) == 0 {
			release()
			// Like a call without a session, a heartbeat that names none is
			// told to handshake (docs/protocol.md, "Errors").
			s.refuse(w, r, Errorf(CodeHandshakeRequired, "%s names no session (no %s header, no body): handshake first", kind, protocol.HeaderSession))
			return nil, nil, nil, false
		}
		var req heartbeatRequest
		err = json.Unmarshal(body, &req)
		release()
		if err != nil {
			s.fail(w, Errorf(CodeInvalidArgument, "%s body must be {\"sessions\":[…]}: %v", kind, err))
			return nil, nil, nil, false
		}
		tokens = req.Sessions
	}
	sessions, err := s.gate.OwnSessions(p, tokens)
	if err != nil {
		s.refuse(w, r, err)
		return nil, nil, nil, false
	}
	if !p.Authenticated {
		for _, sess := range sessions {
			if sess != nil {
				p.Identity = Identity{Component: sess.peer.Component}
				break
			}
		}
	}
	if err := s.authorize(withPeer(r.Context(), p), &Entry{Kind: kind, Peer: p}); err != nil {
		s.refuse(w, r, err)
		return nil, nil, nil, false
	}
	return p, tokens, sessions, true
}

// heartbeatRequest, heartbeatAnswer and topicWriterReport are the
// heartbeat's bodies, which the client's endpoints and heartbeat senders
// write and read: see package wire.
type (
	heartbeatRequest  = wire.HeartbeatRequest
	heartbeatAnswer   = wire.HeartbeatAnswer
	topicWriterReport = wire.TopicWriterReport
)

// encodeTimeout and decodeTimeout are the deadline header's format, which
// a client writes and a server reads: see package wire.
func encodeTimeout(d time.Duration) string { return wire.EncodeTimeout(d) }

func decodeTimeout(s string) (time.Duration, error) { return wire.DecodeTimeout(s) }

// serveHeartbeat answers POST /lockstep/heartbeat: it renews every session
// named, in the body or (for one session) in the session header, and reports
// which are lost and which are asked to resync. One request carries the
// heartbeats of all sessions of a client process, so a node simulator with
// 10,000 sessions sends one request per interval, not 10,000.
func (s *Server) serveHeartbeat(w http.ResponseWriter, r *http.Request) {
	p, tokens, sessions, ok := s.admitSessions(w, r, EntryHeartbeat, true)
	if !ok {
		return
	}
	out, err := s.intercept(withPeer(r.Context(), p), &Call{Kind: EntryHeartbeat, Header: r.Header, Request: tokens},
		func(context.Context, *Call) (any, error) {
			draining := s.draining.Load()
			now := s.now()
			ans := heartbeatAnswer{Lost: []string{}, Resync: []string{}}
			contracts := map[string]bool{}
			for i, sess := range sessions {
				if sess == nil || s.sessions.Get(tokens[i]) != sess {
					ans.Lost = append(ans.Lost, tokens[i])
					continue
				}
				contracts[sess.contract] = true
				sess.lastSeen.Store(now)
				if draining {
					sess.drainNotified.Store(true)
				}
				if sess.resync.Swap(false) {
					ans.Resync = append(ans.Resync, tokens[i])
				}
			}
			ans.Topics = s.topicWriterReports(contracts)
			return json.Marshal(ans)
		})
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	if s.draining.Load() {
		markDraining(w)
	}
	writeJSON(w, http.StatusOK, out.([]byte))
}

// beginPeerBody counts a body of the peer on its way, from the entry's
// admission until the returned function is called once it has been read,
// bounded by Limits.BodiesPerPeer over all the peer's connections and
// streams. Before this, one certificate's HTTP/2 connections could each
// hold hundreds of streams whose bodies never came (200 connections of 250
// stalled hellos held about 1 GB until the body deadline). Beyond the
// bound the entry is refused resource_exhausted before its body is read,
// counted as bodies_per_peer. The count is apart from the calls in
// flight, so refused hellos held with ?wait= (which count among those)
// never keep a peer's next hello from being read.
func (s *Server) beginPeerBody(u *peerUsage) (func(), error) {
	return s.limits.BeginBody(u)
}
