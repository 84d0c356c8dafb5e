package admit

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/identity"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/metrics"
	"github.com/lockstep-dev/lockstep/framework/internal/sessions"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// ServeHello answers POST /lockstep/handshake: a welcome with a new
// session, or a coded refusal. With ?wait=<duration>, a refusal for
// incompatible versions is held until the server starts draining or the
// wait ends, so a client learns of this server's replacement at once. With
// ?dryRun=1 the server answers what it would answer now, but opens no
// session and holds nothing (see answerDryRun).
func (g *Gate[S]) ServeHello(w http.ResponseWriter, r *http.Request) {
	dryRun := r.URL.Query().Get(protocol.QueryDryRun) == "1"
	if !dryRun {
		var observed func()
		w, observed = g.observeHello(w)
		defer observed()
	}
	// Admission (docs/security.md): identity and rate, then the hello
	// (within the body limits, decoded strictly), then the claim, the
	// Authorizer, and at the session's creation its caps and ownership.
	peer, usage, err := g.Peer(r)
	if err != nil {
		g.Refuse(w, r, err)
		return
	}
	if r.Header.Get(protocol.HeaderOnBehalfOf) != "" {
		var audited func()
		w, audited = g.auditHello(w, r, peer)
		defer audited()
	}
	endRead, err := g.cfg.Limits.BeginBody(usage)
	if err != nil {
		g.Refuse(w, r, err)
		return
	}
	hello, wait, err := g.readHello(w, r)
	endRead()
	if err != nil {
		g.Fail(w, err)
		return
	}
	if ow, ok := w.(*ObservedWriter); ok {
		ow.Contract = hello.Contract
	}
	ctx, srv, behalf, err := g.admitHello(r, peer, &hello, dryRun)
	if err != nil {
		g.Refuse(w, r, err)
		return
	}
	call := Call{Kind: identity.EntryHandshake, Contract: hello.Contract, Header: r.Header, Request: &hello,
		Peer: handshake.Peer{Component: hello.Component, Instance: hello.Instance, Release: hello.Release}}
	h := &admittedHello{w: w, r: r, srv: srv, hello: hello, peer: peer, usage: usage, wait: wait, dryRun: dryRun}
	out, err := g.cfg.Intercept(ctx, call, func(ctx context.Context) (any, error) {
		if behalf != "" {
			// Asked for a new instance of the component: no usage of
			// the operator's is checked (see answerDryRun).
			h.usage = nil
			agreement, refusal := g.negotiate(srv, hello)
			g.answerDryRun(h, agreement, refusal)
			return nil, nil
		}
		return g.answerHello(ctx, h)
	})
	switch {
	case err != nil:
		g.Refuse(w, r, err)
	case out != nil:
		WriteJSON(w, http.StatusOK, out.([]byte))
	}
}

// observeHello wraps w so that the server's observer counts the
// handshake by outcome (welcome, refused with a reason, error with a code)
// once observed is called; w is returned as it is without an observer.
func (g *Gate[S]) observeHello(w http.ResponseWriter) (_ http.ResponseWriter, observed func()) {
	obs := g.cfg.Observer
	if obs == nil {
		return w, func() {}
	}
	ow := &ObservedWriter{ResponseWriter: w}
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

// auditHello wraps w (unless it is observed already) so that a hello
// asked on behalf of a client component is audited whatever its outcome,
// which the writer records, once audited is called.
func (g *Gate[S]) auditHello(w http.ResponseWriter, r *http.Request, peer *identity.Peer) (_ http.ResponseWriter, audited func()) {
	ow, ok := w.(*ObservedWriter)
	if !ok {
		ow = &ObservedWriter{ResponseWriter: w}
	}
	return ow, func() {
		outcome := "accepted"
		switch {
		case ow.Reason != "":
			outcome = metrics.ReasonLabel(string(ow.Reason))
		case ow.Code != "":
			outcome = metrics.ReasonLabel(string(ow.Code))
		}
		g.AuditOnBehalf(Audit{Kind: identity.EntryHandshake, Peer: peer, Behalf: r.Header.Get(protocol.HeaderOnBehalfOf),
			Contract: ow.Contract, Outcome: outcome})
	}
}

// readHello reads and strictly decodes a handshake's hello within the
// body limits, and its ?wait=, capped at MaxHandshakeWait. Its errors are
// answered with Fail: the body has been read.
func (g *Gate[S]) readHello(w http.ResponseWriter, r *http.Request) (handshake.Hello, time.Duration, error) {
	body, release, err := g.ReadBodyLimit(w, r, handshake.MaxHelloBytes, limits.HelloBytes)
	if err != nil {
		return handshake.Hello{}, 0, err
	}
	hello, err := handshake.DecodeHello(body)
	release()
	if err != nil {
		switch {
		case errors.Is(err, handshake.ErrNameTooLong):
			g.cfg.Count(limits.NameBytes)
		case errors.Is(err, handshake.ErrTooManyOffers):
			g.cfg.Count(limits.Offers)
		}
		return handshake.Hello{}, 0, apierror.Errorf(apierror.CodeInvalidArgument, "hello: %v", err)
	}
	var wait time.Duration
	if q := r.URL.Query().Get("wait"); q != "" {
		wait, err = time.ParseDuration(q)
		if err != nil || wait < 0 {
			return handshake.Hello{}, 0, apierror.Errorf(apierror.CodeInvalidArgument, "wait=%q is not a duration such as 30s", q)
		}
		wait = min(wait, g.cfg.MaxHandshakeWait)
	}
	return hello, wait, nil
}

// admitHello is the admission of a decoded hello: the component it claims
// must be the authenticated peer's (which, without mutual TLS, it becomes),
// unless an operator asks a dry run on its behalf (OnBehalfOf), the
// contract must be served here, and the Authorizer must allow it. It
// returns the request's context carrying the peer, what the server serves
// of the contract, and the component asked on behalf of ("" for none).
func (g *Gate[S]) admitHello(r *http.Request, peer *identity.Peer, hello *handshake.Hello, dryRun bool) (context.Context, handshake.Server, string, error) {
	behalf, err := g.OnBehalfOf(r, peer, hello.Component, dryRun)
	if err != nil {
		return nil, handshake.Server{}, "", err
	}
	if !peer.Authenticated {
		peer.Identity = identity.Identity{Component: hello.Component}
	}
	if behalf == "" {
		peer.Instance = hello.Instance
	}
	srv, ok := g.cfg.Serves(hello.Contract)
	if !ok {
		return nil, handshake.Server{}, "", apierror.Errorf(apierror.CodeNotFound, "%s does not serve contract %q", g.cfg.Component, hello.Contract)
	}
	ctx := identity.WithPeer(r.Context(), peer)
	if err := g.authorize(ctx, &identity.Entry{Kind: identity.EntryHandshake, Contract: hello.Contract, Peer: peer, Hello: hello, OnBehalfOf: behalf}); err != nil {
		return nil, handshake.Server{}, "", err
	}
	return ctx, srv, behalf, nil
}

// admittedHello is a hello that passed admission, and what answering it
// needs.
type admittedHello struct {
	w     http.ResponseWriter
	r     *http.Request
	srv   handshake.Server
	hello handshake.Hello
	peer  *identity.Peer
	// usage is the peer's share of the limits; nil for a dry run asked on
	// behalf of a client component.
	usage *limits.Usage
	// wait is how long a refusal that may change may be held (?wait=).
	wait time.Duration
	// dryRun: answer what a handshake would get, open nothing.
	dryRun bool
}

// answerHello negotiates a hello that passed admission and opens its
// session, returning the welcome; a dry run answers itself and returns nil.
func (g *Gate[S]) answerHello(ctx context.Context, h *admittedHello) (any, error) {
	agreement, refusal := g.negotiate(h.srv, h.hello)
	if h.dryRun {
		g.answerDryRun(h, agreement, refusal)
		return nil, nil
	}
	if refusal != nil && h.wait > 0 && g.cfg.Holdable(refusal.Reason) {
		drained, held := g.hold(ctx, h)
		if drained {
			agreement, refusal = g.negotiate(h.srv, h.hello)
		}
		if held && ctx.Err() != nil {
			return nil, nil
		}
	}
	if refusal != nil {
		if ow, ok := h.w.(*ObservedWriter); ok {
			ow.Reason = refusal.Reason
		}
		if g.cfg.Logger.Enabled(ctx, slog.LevelDebug) { // no arguments boxed when debug is off
			g.cfg.Logger.Debug("lockstep: hello refused", "contract", h.hello.Contract, "reason", refusal.Reason,
				"peer", h.hello.Component, "instance", h.hello.Instance)
		}
		return nil, apierror.NewError(apierror.Code(refusal.Code), refusal).WithDetails(refusal)
	}
	return g.openSession(h, agreement)
}

// hold holds a hello's refusal that may change (?wait=) until the server
// starts draining (drained: the hello is negotiated again), the wait ends
// or the request's context does. Held, a refusal keeps a goroutine and a
// connection for up to MaxHandshakeWait: it counts as a call in flight of
// its peer, so that a peer cannot hold more than Limits.InFlightPerPeer
// of them; beyond that it is answered at once, as without ?wait=, and
// held is false.
func (g *Gate[S]) hold(ctx context.Context, h *admittedHello) (drained, held bool) {
	end, _ := g.cfg.Limits.TryBeginCall(h.usage, 1)
	if end == nil {
		return false, false
	}
	defer end()
	t := g.cfg.Clock.NewTimer(h.wait)
	defer t.Stop()
	select {
	case <-g.cfg.DrainStarted:
		return true, true
	case <-t.Chan():
	case <-ctx.Done():
	}
	return false, true
}

// openSession opens the session a hello agreed, in the session table
// (which refuses it beyond the server's and the peer's bounds, or when
// another identity holds its instance), and returns the welcome.
func (g *Gate[S]) openSession(h *admittedHello, agreement handshake.Agreement) (any, error) {
	var none S
	hello := h.hello
	sess := g.cfg.NewSession(Spec{Token: g.cfg.Token(), Contract: hello.Contract, Version: agreement.Version,
		Client: handshake.Peer{Component: hello.Component, Instance: hello.Instance, Release: hello.Release},
		Owner:  h.peer, Usage: h.usage, Now: g.cfg.Now()})
	replaced, err := g.cfg.Sessions.Put(sess)
	if err != nil {
		return nil, err
	}
	if replaced == none && g.cfg.Joined != nil {
		g.cfg.Joined(sess)
	}
	g.cfg.Logger.Debug("lockstep: session opened", "contract", hello.Contract, "version", sess.Version(),
		"peer", hello.Component, "instance", hello.Instance, "identity", h.peer.Identity.String())
	welcome, _ := json.Marshal(g.welcome(sess.Token(), agreement))
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
func (g *Gate[S]) answerDryRun(h *admittedHello, agreement handshake.Agreement, refusal *handshake.Refusal) {
	w, r, hello := h.w, h.r, h.hello
	if refusal != nil {
		if ow, ok := w.(*ObservedWriter); ok {
			ow.Reason = refusal.Reason
		}
		g.Refuse(w, r, apierror.NewError(apierror.Code(refusal.Code), refusal).WithDetails(refusal))
		return
	}
	if h.usage == nil {
		if err := g.cfg.Sessions.CheckNew(); err != nil {
			g.Refuse(w, r, err)
			return
		}
	} else if err := g.cfg.Sessions.Check(h.usage, h.peer, sessions.Key{Contract: hello.Contract, Instance: hello.Instance}); err != nil {
		g.Refuse(w, r, err)
		return
	}
	welcome, _ := json.Marshal(g.welcome("", agreement))
	WriteJSON(w, http.StatusOK, welcome)
}

// welcome is the server's welcome into the session named token ("" for a
// dry run's, which opens none) at what agreement agreed.
func (g *Gate[S]) welcome(token string, agreement handshake.Agreement) handshake.Welcome {
	return handshake.Welcome{
		Session:     token,
		Version:     agreement.Version,
		Fingerprint: agreement.Fingerprint,
		Peer:        g.cfg.Self,
		Heartbeat:   handshake.Duration(g.cfg.Heartbeat),
		TTL:         handshake.Duration(g.cfg.TTL),
	}
}

// negotiate negotiates hello against what the server serves of its
// contract, as the server is now (draining or not).
func (g *Gate[S]) negotiate(srv handshake.Server, hello handshake.Hello) (handshake.Agreement, *handshake.Refusal) {
	srv.Draining = g.cfg.Draining()
	return handshake.Negotiate(srv, hello)
}
