package framework

// A server's topics: where each is registered, how the topic store
// (framework/internal/topics) is wired to the server, the admission of
// client writes and watches, and the server's drain, stop and lost peers
// applied to its topics.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lockstep-dev/lockstep/framework/internal/admit"
	"github.com/lockstep-dev/lockstep/framework/internal/topics"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// topicStore is one topic of one served contract version (topics.Store).
type topicStore = topics.Store

// registerTopic adds a topic of a contract version to the server; it
// panics on setup mistakes, which are programming errors. validate checks
// a client's object (client-written topics only).
func (s *Server) registerTopic(c *Contract, name string, side handshake.Role, opts []TopicOption, validate func([]byte) error) *topicStore {
	decl, ok := c.Topic(name)
	if !ok {
		panic(fmt.Sprintf("lockstep: contract %s %s declares no topic %s", c.Name(), c.Version(), name))
	}
	if decl.Writer != side {
		if side == handshake.RoleServer {
			panic(fmt.Sprintf("lockstep: topic %s is written by the client; use ServeClientTopic", name))
		}
		panic(fmt.Sprintf("lockstep: topic %s is written by the server; use ServeTopic", name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servedVersionLocked(c, "topics")
	t := topics.NewStore(topics.StoreConfig{Host: s.topicHost(), Contract: c.Name(), Version: c.Version(), Topic: name, Server: c.Server(),
		Decl: decl, Config: newTopicConfig(opts), Validate: validate})
	if err := s.topics.Add(t); err != nil {
		panic("lockstep: " + err.Error())
	}
	return t
}

// topicHost is what the server gives its topics (topics.Host).
func (s *Server) topicHost() *topics.Host {
	return &topics.Host{
		Component: s.cfg.Component, Instance: s.cfg.Instance, Clock: s.cfg.Clock, Now: s.now, Goroutines: &s.watchWG,
		SessionTTL: s.cfg.SessionTTL, WriteTimeout: s.cfg.watchWriteTimeout, WatchQueuedBytes: s.cfg.Limits.WatchQueuedBytes,
		Refused:     s.cfg.Metrics.limitRefused,
		SessionLive: func(contract, instance string) bool { return s.sessions.Has(sessionKey(contract, instance)) },
		AddWatcher: func(ts topics.Session) error {
			sess := ts.(*session)
			return s.limits.AddWatcher(sess.usage, &sess.watchers)
		},
		RemoveWatcher: func(ts topics.Session) {
			sess := ts.(*session)
			s.limits.RemoveWatcher(sess.usage, &sess.watchers)
		},
	}
}

// A session is the topics' Session: who holds it, for its watch streams.

// Peer returns who holds the session.
func (sess *session) Peer() handshake.Peer { return sess.peer }

// Contract returns the name of the session's contract.
func (sess *session) Contract() string { return sess.contract }

// ShareKey names the session's peer for the bounds peers share.
func (sess *session) ShareKey() string { return sess.usage.Key }

// NoticeDrain records that the session's client was told the server
// drains.
func (sess *session) NoticeDrain() { sess.drainNotified.Store(true) }

// topicWriterReports reports the writers of every topic of the contracts
// named.
func (s *Server) topicWriterReports(contracts map[string]bool) []topicWriterReport {
	return s.topics.WriterReports(contracts)
}

// topicRequest finds the topic of a topic request and admits it
// (admission.go): draining (for writes), identity, session and its
// binding, version, rate, calls in flight (for writes), authorization. On
// success the caller must call done on the admission when the entry ends.
func (s *Server) topicRequest(r *http.Request, kind EntryKind) (*topicStore, *admitted, error) {
	contract, ver, topic := chi.URLParam(r, "contract"), chi.URLParam(r, "version"), chi.URLParam(r, "topic")
	sc := s.lookup(contract)
	if sc == nil {
		return nil, nil, s.routingRefusal(r, Errorf(CodeNotFound, "%s does not serve contract %q", s.cfg.Component, contract))
	}
	s.mu.RLock()
	sv := sc.versions[ver]
	s.mu.RUnlock()
	t := s.topics.Get(contract, ver, topic)
	if sv == nil {
		return nil, nil, s.routingRefusal(r, Errorf(CodeIncompatiblePeer, "%s does not speak %s %s: handshake again", s.cfg.Component, contract, ver))
	}
	if t == nil {
		if _, declared := sv.contract.Topic(topic); declared {
			return nil, nil, s.routingRefusal(r, Errorf(CodeNotFound, "%s does not hold topic %s of %s %s", s.cfg.Component, topic, contract, ver))
		}
		return nil, nil, s.routingRefusal(r, Errorf(CodeNotFound, "%s %s has no topic %q", contract, ver, topic))
	}
	adm, err := s.gate.Admit(r, entry{Kind: kind, Contract: contract, Version: ver, Topic: topic, Client: sv.contract.Client(),
		Call: kind == EntryTopicWrite, Authorize: true})
	if err != nil {
		return nil, nil, err
	}
	return t, adm, nil
}

// serveTopicWrite answers POST /lockstep/<contract>/<version>/topics/<Topic>.
func (s *Server) serveTopicWrite(w http.ResponseWriter, r *http.Request) {
	t, adm, err := s.topicRequest(r, EntryTopicWrite)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	defer adm.Done()
	sess := adm.Sess
	if t.Decl().Writer != handshake.RoleClient {
		s.refuse(w, r, Errorf(CodePermissionDenied, "topic %s is written by %s, not by its clients", t.Name(), t.Server()))
		return
	}
	body, release, ok := s.gate.ReadBody(w, r, adm)
	if !ok {
		return
	}
	out, err := s.intercept(adm.Ctx, &Call{Kind: EntryTopicWrite, Contract: t.Contract(), Version: t.Version(),
		Method: t.Name(), Peer: sess.peer, Header: r.Header, Request: json.RawMessage(body)}, func(ctx context.Context, call *Call) (any, error) {
		// The change carries, through the server's Propagator, the trace
		// context of the write's handling (a span an interceptor started
		// for it), or else that of the request's headers.
		p := s.cfg.Propagator
		header := changeHeader(p, ctx)
		if header == nil && p != nil {
			header = changeHeader(p, p.Extract(ctx, call.Header))
		}
		return t.ClientWrite(topics.WriterID{Component: sess.peer.Component, Instance: sess.peer.Instance}, sess.usage.Key, body, header)
	})
	release()
	draining := s.Draining()
	if draining {
		sess.drainNotified.Store(true)
	}
	if errors.Is(err, topics.ErrWriterSessionLost) {
		s.refuse(w, r, err)
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	if draining {
		markDraining(w)
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}

// serveWatch answers GET /lockstep/<contract>/<version>/watch/<Topic> with
// a stream of newline-delimited JSON frames: the current object of every
// key, a synced marker, then each change (docs/topics.md); with selector
// values in the query (?nodeName=node-042), only of the objects that hold
// them.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request) {
	t, adm, err := s.topicRequest(r, EntryWatch)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	defer adm.Done()
	sess := adm.Sess
	refuse := func(err error) {
		s.gate.AuditAdmitted(adm, admit.OutcomeLabel(err))
		s.refuse(w, r, err)
	}
	if s.Draining() {
		sess.drainNotified.Store(true)
		refuse(Errorf(CodeUnavailable, "%s is draining: watch another endpoint", s.cfg.Component))
		return
	}
	query := r.URL.Query()
	sel, err := t.ParseSelection(query)
	if err != nil {
		refuse(err)
		return
	}
	var ws *topics.Stream
	_, err = s.intercept(adm.Ctx, &Call{Kind: EntryWatch, Contract: t.Contract(), Version: t.Version(),
		Method: t.Name(), Peer: sess.peer, Header: r.Header}, func(context.Context, *Call) (any, error) {
		ws, err = t.AddWatcher(sess, query.Get(protocol.QuerySince), sel)
		return nil, err
	})
	if err != nil {
		refuse(err)
		return
	}
	s.gate.AuditAdmitted(adm, admit.OutcomeLabel(nil))
	ws.Serve(w, r)
}

// TopicStats describes one topic a server holds, for status pages,
// metrics and tests (topics.Stats documents each field).
type TopicStats = topics.Stats

// WatcherStats describes one watch stream of a topic.
type WatcherStats = topics.WatcherStats

// TopicStats describes every topic the server holds, sorted by contract,
// version and topic.
func (s *Server) TopicStats() []TopicStats { return s.topics.Stats() }
