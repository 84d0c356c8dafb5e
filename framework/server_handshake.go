package framework

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"

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
	if obs := s.cfg.Observer; obs != nil && !dryRun {
		ow := &observedWriter{ResponseWriter: w}
		w = ow
		defer func() {
			outcome := "welcome"
			switch {
			case ow.reason != "":
				outcome = string(ow.reason)
			case ow.code != "":
				outcome = string(ow.code)
			}
			obs.Handshake(ow.contract, outcome)
		}()
	}
	body, release, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		s.refuse(w, err)
		return
	}
	var hello handshake.Hello
	err = json.Unmarshal(body, &hello)
	release()
	if err != nil {
		s.refuse(w, Errorf(CodeInvalidArgument, "hello is not valid JSON: %v", err))
		return
	}
	if err := hello.Validate(); err != nil {
		s.refuse(w, Errorf(CodeInvalidArgument, "hello: %v", err))
		return
	}
	var wait time.Duration
	if q := r.URL.Query().Get("wait"); q != "" {
		wait, err = time.ParseDuration(q)
		if err != nil || wait < 0 {
			s.refuse(w, Errorf(CodeInvalidArgument, "wait=%q is not a duration such as 30s", q))
			return
		}
		wait = min(wait, s.cfg.MaxHandshakeWait)
	}
	if ow, ok := w.(*observedWriter); ok {
		ow.contract = hello.Contract
	}
	sc := s.lookup(hello.Contract)
	if sc == nil {
		s.refuse(w, Errorf(CodeNotFound, "%s does not serve contract %q", s.cfg.Component, hello.Contract))
		return
	}
	agreement, refusal := s.negotiate(sc, hello)
	if dryRun {
		s.answerDryRun(w, hello, agreement, refusal)
		return
	}
	if refusal != nil && wait > 0 && holdable(refusal.Reason) {
		t := s.cfg.Clock.NewTimer(wait)
		select {
		case <-s.drainCh:
			agreement, refusal = s.negotiate(sc, hello)
		case <-t.Chan():
		case <-r.Context().Done():
			t.Stop()
			return
		}
		t.Stop()
	}
	if refusal != nil {
		if ow, ok := w.(*observedWriter); ok {
			ow.reason = refusal.Reason
		}
		s.refuse(w, NewError(Code(refusal.Code), refusal).WithDetails(refusal))
		return
	}
	if s.sessions.len() >= s.cfg.MaxSessions && !s.sessions.has(hello.Contract, hello.Instance) {
		s.refuse(w, Errorf(CodeResourceExhausted, "%s holds its limit of %d sessions", s.cfg.Component, s.cfg.MaxSessions))
		return
	}
	sv := sc.versions[agreement.Version]
	now := s.now()
	sess := &session{
		token:     randomID(16),
		contract:  hello.Contract,
		version:   sv.contract.Version(),
		peer:      handshake.Peer{Component: hello.Component, Instance: hello.Instance, Release: hello.Release},
		createdAt: now,
	}
	sess.lastSeen.Store(now)
	if replaced := s.sessions.put(sess); replaced == nil && s.cfg.OnPeerJoined != nil {
		s.cfg.OnPeerJoined(s.info(sess))
	}
	s.cfg.Logger.Debug("lockstep: session opened", "contract", hello.Contract, "version", sess.version,
		"peer", hello.Component, "instance", hello.Instance)
	welcome, _ := json.Marshal(handshake.Welcome{
		Session:     sess.token,
		Version:     sess.version,
		Fingerprint: agreement.Fingerprint,
		Peer:        handshake.Peer{Component: s.cfg.Component, Instance: s.cfg.Instance, Release: s.cfg.Release},
		Heartbeat:   handshake.Duration(s.cfg.Heartbeat),
		TTL:         handshake.Duration(s.cfg.SessionTTL),
	})
	writeJSON(w, http.StatusOK, welcome)
}

// answerDryRun answers a dry-run handshake, which an operator's tool sends to
// ask whether a client would be accepted: the refusal a real handshake would
// get now, or a welcome without a session. It creates no session, fires no
// peer hooks and is not counted as a handshake, so asking cannot disturb
// the peers the server serves.
func (s *Server) answerDryRun(w http.ResponseWriter, hello handshake.Hello, agreement handshake.Agreement, refusal *handshake.Refusal) {
	if refusal != nil {
		s.refuse(w, NewError(Code(refusal.Code), refusal).WithDetails(refusal))
		return
	}
	if s.sessions.len() >= s.cfg.MaxSessions && !s.sessions.has(hello.Contract, hello.Instance) {
		s.refuse(w, Errorf(CodeResourceExhausted, "%s holds its limit of %d sessions", s.cfg.Component, s.cfg.MaxSessions))
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

// holdable reports whether a refusal may change when this server is
// replaced: only then is it worth holding open.
func holdable(r handshake.Reason) bool {
	switch r {
	case handshake.ReasonVersionMismatch, handshake.ReasonFingerprintMismatch, handshake.ReasonReleaseConstraint:
		return true
	}
	return false
}

// serveCloseSession answers DELETE /lockstep/session: the sessions named,
// in the session header or as {"sessions":[…]} in the body, are closed.
// Closing an unknown session succeeds, so the call is idempotent. A client
// closes its sessions with a draining server once it has stopped sending
// calls there; the drain waits for that.
func (s *Server) serveCloseSession(w http.ResponseWriter, r *http.Request) {
	tokens, ok := s.readSessions(w, r, "session close", false)
	if !ok {
		return
	}
	for _, token := range tokens {
		if sess := s.sessions.get(token); sess != nil {
			sess.drainNotified.Store(true)
			if s.sessions.remove(sess) {
				s.peerLost(sess)
			}
		}
	}
	if s.draining.Load() {
		s.lastArrival.Store(s.now())
		markDraining(w)
	}
	w.WriteHeader(http.StatusNoContent)
}

// readSessions reads the sessions a heartbeat or a session close names:
// one in the session header, or {"sessions":[…]} in the body (which only a
// heartbeat requires). A malformed request is answered here, and ok is false.
func (s *Server) readSessions(w http.ResponseWriter, r *http.Request, what string, bodyRequired bool) (tokens []string, ok bool) {
	if token := r.Header.Get(protocol.HeaderSession); token != "" {
		return []string{token}, true
	}
	if !bodyRequired && r.ContentLength == 0 {
		return nil, true
	}
	body, release, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		s.refuse(w, err)
		return nil, false
	}
	var req heartbeatRequest
	err = json.Unmarshal(body, &req)
	release()
	if err != nil {
		s.refuse(w, Errorf(CodeInvalidArgument, "%s body must be {\"sessions\":[…]}: %v", what, err))
		return nil, false
	}
	return req.Sessions, true
}

// heartbeatRequest is the body of POST /lockstep/heartbeat: the sessions
// of one client process at this server, renewed together.
type heartbeatRequest struct {
	Sessions []string `json:"sessions"`
}

// heartbeatAnswer is the body of a heartbeat's answer.
type heartbeatAnswer struct {
	// Lost lists the sessions the server does not hold (lapsed, closed, or
	// from before a restart): their clients must handshake again.
	Lost []string `json:"lost"`
	// Resync lists the sessions whose client should send its full state
	// again.
	Resync []string `json:"resync"`
}

// serveHeartbeat answers POST /lockstep/heartbeat: it renews every session
// named, in the body or (for one session) in the session header, and reports
// which are lost and which are asked to resync. One request carries the
// heartbeats of all sessions of a client process, so a node simulator with
// 10,000 sessions sends one request per interval, not 10,000.
func (s *Server) serveHeartbeat(w http.ResponseWriter, r *http.Request) {
	tokens, ok := s.readSessions(w, r, "heartbeat", true)
	if !ok {
		return
	}
	draining := s.draining.Load()
	now := s.now()
	ans := heartbeatAnswer{Lost: []string{}, Resync: []string{}}
	for _, token := range tokens {
		sess := s.sessions.get(token)
		if sess == nil {
			ans.Lost = append(ans.Lost, token)
			continue
		}
		sess.lastSeen.Store(now)
		if draining {
			sess.drainNotified.Store(true)
		}
		if sess.resync.Swap(false) {
			ans.Resync = append(ans.Resync, token)
		}
	}
	if draining {
		markDraining(w)
	}
	body, _ := json.Marshal(ans)
	writeJSON(w, http.StatusOK, body)
}
