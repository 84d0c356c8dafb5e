package admit

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/identity"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// ServeClose answers DELETE /lockstep/session: the sessions named, in the
// session header or as {"sessions":[…]} in the body, are closed. Closing
// an unknown session succeeds, so the call is idempotent. A client closes
// its sessions with a draining server once it has stopped sending calls
// there; the drain waits for that.
func (g *Gate[S]) ServeClose(w http.ResponseWriter, r *http.Request) {
	var none S
	p, tokens, named, ok := g.admitSessions(w, r, identity.EntrySessionClose, false)
	if !ok {
		return
	}
	_, err := g.cfg.Intercept(identity.WithPeer(r.Context(), p), Call{Kind: identity.EntrySessionClose, Header: r.Header, Request: tokens},
		func(context.Context) (any, error) {
			for _, sess := range named {
				if sess == none {
					continue
				}
				sess.NoticeDrain()
				if g.cfg.Sessions.Remove(sess) {
					g.cfg.Lost(sess)
				}
			}
			return nil, nil
		})
	if err != nil {
		g.Refuse(w, r, err)
		return
	}
	if g.cfg.Draining() {
		g.cfg.Arrived()
		MarkDraining(w)
	}
	w.WriteHeader(http.StatusNoContent)
}

// ServeHeartbeat answers POST /lockstep/heartbeat: it renews every session
// named, in the body or (for one session) in the session header, and
// reports which are lost and which are asked to resync. One request
// carries the heartbeats of all sessions of a client process, so a node
// simulator with 10,000 sessions sends one request per interval, not
// 10,000.
func (g *Gate[S]) ServeHeartbeat(w http.ResponseWriter, r *http.Request) {
	p, tokens, named, ok := g.admitSessions(w, r, identity.EntryHeartbeat, true)
	if !ok {
		return
	}
	out, err := g.cfg.Intercept(identity.WithPeer(r.Context(), p), Call{Kind: identity.EntryHeartbeat, Header: r.Header, Request: tokens},
		func(context.Context) (any, error) { return json.Marshal(g.renew(tokens, named)) })
	if err != nil {
		g.Refuse(w, r, err)
		return
	}
	if g.cfg.Draining() {
		MarkDraining(w)
	}
	WriteJSON(w, http.StatusOK, out.([]byte))
}

// renew renews the sessions a heartbeat named (named[i] is tokens[i]'s,
// the zero S for one the server does not hold) and returns the answer:
// the tokens lost, those asked to resync, and the writers of their
// contracts' topics.
func (g *Gate[S]) renew(tokens []string, named []S) wire.HeartbeatAnswer {
	var none S
	draining := g.cfg.Draining()
	now := g.cfg.Now()
	ans := wire.HeartbeatAnswer{Lost: []string{}, Resync: []string{}}
	contracts := map[string]bool{}
	for i, sess := range named {
		if sess == none || g.cfg.Sessions.Get(tokens[i]) != sess {
			ans.Lost = append(ans.Lost, tokens[i])
			continue
		}
		contracts[sess.Contract()] = true
		sess.Renew(now)
		if draining {
			sess.NoticeDrain()
		}
		if sess.TakeResync() {
			ans.Resync = append(ans.Resync, tokens[i])
		}
	}
	ans.Topics = g.cfg.WriterReports(contracts)
	return ans
}

// admitSessions is the admission step of a heartbeat and a session close:
// identity, rate, the body (one session in the session header, or
// {"sessions":[…]}, which only a heartbeat requires), every session named
// the peer's own, and the Authorizer. It returns the sessions named (the
// zero S for a token the server does not hold) beside their tokens; a
// refusal is answered here, and ok is false.
func (g *Gate[S]) admitSessions(w http.ResponseWriter, r *http.Request, kind identity.EntryKind, bodyRequired bool) (*identity.Peer, []string, []S, bool) {
	var none S
	p, tokens, ok := g.sessionTokens(w, r, kind, bodyRequired)
	if !ok {
		return nil, nil, nil, false
	}
	named, err := g.OwnSessions(p, tokens)
	if err != nil {
		g.Refuse(w, r, err)
		return nil, nil, nil, false
	}
	if !p.Authenticated {
		for _, sess := range named {
			if sess != none {
				p.Identity = identity.Identity{Component: sess.Peer().Component}
				break
			}
		}
	}
	if err := g.authorize(identity.WithPeer(r.Context(), p), &identity.Entry{Kind: kind, Peer: p}); err != nil {
		g.Refuse(w, r, err)
		return nil, nil, nil, false
	}
	return p, tokens, named, true
}

// sessionTokens admits a heartbeat's or a session close's peer (identity,
// rate, no Lockstep-On-Behalf-Of) and reads the tokens it names: one in
// the session header, or {"sessions":[…]} in the body, which only a
// heartbeat requires. A refusal is answered here, and ok is false.
func (g *Gate[S]) sessionTokens(w http.ResponseWriter, r *http.Request, kind identity.EntryKind, bodyRequired bool) (_ *identity.Peer, tokens []string, ok bool) {
	p, usage, err := g.Peer(r)
	if err == nil {
		err = RefuseOnBehalf(r)
	}
	if err != nil {
		g.Refuse(w, r, err)
		return nil, nil, false
	}
	switch token := r.Header.Get(protocol.HeaderSession); {
	case token != "":
		return p, []string{token}, true
	case !bodyRequired && r.ContentLength == 0:
		return p, nil, true
	}
	body, release, refused, err := g.ReadPeerBody(w, r, usage)
	if refused != nil {
		g.Refuse(w, r, refused)
		return nil, nil, false
	}
	if err != nil {
		g.Fail(w, err)
		return nil, nil, false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		release()
		// Like a call without a session, a heartbeat that names none is
		// told to handshake (docs/protocol.md, "Errors").
		g.Refuse(w, r, apierror.Errorf(apierror.CodeHandshakeRequired, "%s names no session (no %s header, no body): handshake first", kind, protocol.HeaderSession))
		return nil, nil, false
	}
	var req wire.HeartbeatRequest
	err = json.Unmarshal(body, &req)
	release()
	if err != nil {
		g.Fail(w, apierror.Errorf(apierror.CodeInvalidArgument, "%s body must be {\"sessions\":[…]}: %v", kind, err))
		return nil, nil, false
	}
	return p, req.Sessions, true
}
