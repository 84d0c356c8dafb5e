package framework

import (
	"context"
	"net/http"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/internal/admit"
	hellos "github.com/lockstep-dev/lockstep/framework/internal/hello"
	"github.com/lockstep-dev/lockstep/framework/internal/identity"
)

// The admission step, which every entry a server takes (handshake, call,
// multi-call, topic write, watch, heartbeat, session close, status read)
// passes through, is framework/internal/admit's: its package doc lists the
// checks in their order. The server holds one admit.Gate (Server.gate),
// built here over its sessions, limits, mutual TLS material and
// Authorizer; entries are then dispatched, wrapped by the interceptors.

// entry says what the admission step checks for one request (admit.Entry),
// and admitted is what it found (admit.Admitted): aliases, so that the
// server's handlers read the gate's answers as they are.
type (
	entry    = admit.Entry
	admitted = admit.Admitted[*session]
)

// newGate returns the admission step of s, over what s holds and counts.
func newGate(s *Server) *admit.Gate[*session] {
	var creds *identity.Credentials
	if s.cfg.MTLS != nil {
		creds = s.cfg.MTLS.m
	}
	callEnded := s.callEnded
	return admit.New(admit.Config[*session]{
		Component:             s.cfg.Component,
		MTLS:                  creds,
		Authorizer:            s.cfg.Authorizer,
		Sessions:              s.sessions,
		Limits:                s.limits,
		MaxInFlightPerSession: s.cfg.MaxInFlightPerSession,
		MaxBodyBytes:          s.cfg.MaxBodyBytes,
		BodyReadTimeout:       s.cfg.Limits.BodyReadTimeout,
		Count:                 s.cfg.Metrics.limitRefused,
		OnBehalf:              s.cfg.Metrics.onBehalfEntry,
		Logger:                s.cfg.Logger,
		Observer:              s.cfg.Observer,
		Clock:                 s.cfg.Clock,
		Draining:              s.Draining,
		Now:                   s.now,
		Arrived:               func() { s.lastArrival.Store(s.now()) },
		BeginCall: func() func() {
			s.inFlight.Add(1)
			return callEnded
		},
		Replayed:         func(sess *session, key string) bool { return s.replays.Recorded(replayKeyOf(sess, key)) },
		NewSession:       newSession,
		Token:            func() string { return randomID(16) },
		Joined:           s.peerJoined,
		Lost:             s.peerLost,
		Self:             handshake.Peer{Component: s.cfg.Component, Instance: s.cfg.Instance, Release: s.cfg.Release},
		Heartbeat:        s.cfg.Heartbeat,
		TTL:              s.cfg.SessionTTL,
		MaxHandshakeWait: s.cfg.MaxHandshakeWait,
		Serves:           s.negotiation,
		DrainStarted:     s.life.DrainStarted(),
		Holdable:         hellos.Holdable,
		WriterReports:    s.topicWriterReports,
		Intercept:        s.interceptEntry,
	})
}

// peerJoined tells ServerConfig.OnPeerJoined of a session that replaced
// none.
func (s *Server) peerJoined(sess *session) {
	if s.cfg.OnPeerJoined != nil {
		s.cfg.OnPeerJoined(s.info(sess))
	}
}

// interceptEntry runs the server's interceptors (intercept) around an
// entry the gate serves itself: a handshake, a heartbeat, a session close.
func (s *Server) interceptEntry(ctx context.Context, c admit.Call, final func(context.Context) (any, error)) (any, error) {
	call := &Call{Kind: c.Kind, Contract: c.Contract, Header: c.Header, Request: c.Request, Peer: c.Peer}
	return s.intercept(ctx, call, func(ctx context.Context, _ *Call) (any, error) { return final(ctx) })
}

// newSession makes the session record sp describes, seen at its creation.
func newSession(sp admit.Spec) *session {
	sess := &session{token: sp.Token, contract: sp.Contract, version: sp.Version, peer: sp.Client, createdAt: sp.Now,
		owner: sp.Owner, usage: sp.Usage}
	sess.lastSeen.Store(sp.Now)
	return sess
}

// What admission reads and counts of a session (admit.Session), beside
// what the session table (session.go) and the topics (topic_server.go)
// read.
func (s *session) Version() string       { return s.version }
func (s *session) AddCall(n int64) int64 { return s.inFlight.Add(n) }
func (s *session) Renew(now int64)       { s.lastSeen.Store(now) }
func (s *session) TakeResync() bool      { return s.resync.Swap(false) }

// refuse answers a request that never reached a handler with err, marked
// not processed (admit.Gate.Refuse).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) { s.gate.Refuse(w, r, err) }

// fail answers a request whose handler ran, or may have run, with err
// (admit.Gate.Fail).
func (s *Server) fail(w http.ResponseWriter, err error) { s.gate.Fail(w, err) }

// routingRefusal is what a request refused before its identity was
// checked is told (admit.Gate.RoutingRefusal).
func (s *Server) routingRefusal(r *http.Request, err error) error {
	return s.gate.RoutingRefusal(r, err)
}

// writeJSON writes a 200-class answer with a JSON body.
func writeJSON(w http.ResponseWriter, status int, body []byte) { admit.WriteJSON(w, status, body) }

// markDraining tells the client the server is draining and closes the
// connection after this answer (admit.MarkDraining).
func markDraining(w http.ResponseWriter) { admit.MarkDraining(w) }

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
