package framework

// HTTP serving of topics: client writes and watch streams.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// topicWriteRequest is the body of POST
// /lockstep/<contract>/<version>/topics/<Topic>: exactly one of set and
// delete. Epoch and seq are the writer's (optional: the server continues
// the writer's current epoch and sequence without them).
type topicWriteRequest struct {
	Epoch  string          `json:"epoch,omitempty"`
	Seq    uint64          `json:"seq,omitempty"`
	Set    json.RawMessage `json:"set,omitempty"`
	Delete *string         `json:"delete,omitempty"`
}

// topicWriteAnswer is the answer to a topic write: the key, the version
// the server holds for it, and whether this write changed anything.
type topicWriteAnswer struct {
	Key     string `json:"key"`
	Epoch   string `json:"epoch"`
	Seq     uint64 `json:"seq"`
	Applied bool   `json:"applied"`
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
	var t *topicStore
	if sv != nil {
		t = sv.topics[topic]
	}
	s.mu.RUnlock()
	if sv == nil {
		return nil, nil, s.routingRefusal(r, Errorf(CodeIncompatiblePeer, "%s does not speak %s %s: handshake again", s.cfg.Component, contract, ver))
	}
	if t == nil {
		if _, declared := sv.contract.Topic(topic); declared {
			return nil, nil, s.routingRefusal(r, Errorf(CodeNotFound, "%s does not hold topic %s of %s %s", s.cfg.Component, topic, contract, ver))
		}
		return nil, nil, s.routingRefusal(r, Errorf(CodeNotFound, "%s %s has no topic %q", contract, ver, topic))
	}
	adm, err := s.admit(r, entry{kind: kind, contract: contract, version: ver, topic: topic, client: sv.contract.Client(),
		call: kind == EntryTopicWrite, authorize: true})
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
	defer adm.done()
	sess := adm.sess
	if t.decl.Writer != handshake.RoleClient {
		s.refuse(w, r, Errorf(CodePermissionDenied, "topic %s is written by %s, not by its clients", t.name, t.contract.Server()))
		return
	}
	body, release, ok := s.readBody(w, r, adm)
	if !ok {
		return
	}
	out, err := s.intercept(adm.ctx, &Call{Kind: EntryTopicWrite, Contract: t.contract.Name(), Version: t.contract.Version(),
		Method: t.name, Peer: sess.peer, Header: r.Header, Request: json.RawMessage(body)}, func(ctx context.Context, call *Call) (any, error) {
		// The change carries, through the server's Propagator, the trace
		// context of the write's handling (a span an interceptor started
		// for it), or else that of the request's headers.
		p := s.cfg.Propagator
		header := changeHeader(p, ctx)
		if header == nil && p != nil {
			header = changeHeader(p, p.Extract(ctx, call.Header))
		}
		return t.write(writerKey{sess.peer.Component, sess.peer.Instance}, sess.usage.Key, body, header)
	})
	release()
	draining := s.draining.Load()
	if draining {
		sess.drainNotified.Store(true)
	}
	if errors.Is(err, errWriterSessionLost) {
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

// write decodes, checks and applies one client write by writer w, an
// instance of the writer identity holder (its peer's limitsKey).
func (t *topicStore) write(w writerKey, holder string, body, header []byte) (topicWriteAnswer, error) {
	var req topicWriteRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return topicWriteAnswer{}, Errorf(CodeInvalidArgument, `topic write must be {"set":{…}} or {"delete":"key"}: %v`, err)
	}
	if dec.More() {
		return topicWriteAnswer{}, Errorf(CodeInvalidArgument, "trailing data after the topic write")
	}
	if err := checkEpoch(req.Epoch); err != nil {
		return topicWriteAnswer{}, err
	}
	hasSet := len(req.Set) > 0 && !bytes.Equal(req.Set, []byte("null"))
	if hasSet == (req.Delete != nil) {
		return topicWriteAnswer{}, Errorf(CodeInvalidArgument, `topic write must hold exactly one of "set" and "delete"`)
	}
	var (
		key     string
		ver     ObjectVersion
		applied bool
		err     error
	)
	if req.Delete != nil {
		key = *req.Delete
		if err := checkKey(key); err != nil {
			return topicWriteAnswer{}, err
		}
		ver, applied, err = t.del(w, req.Epoch, req.Seq, key, header)
	} else {
		var compact bytes.Buffer
		if err := json.Compact(&compact, req.Set); err != nil {
			return topicWriteAnswer{}, Errorf(CodeInvalidArgument, "%s is not valid JSON: %v", t.decl.Object, err)
		}
		raw := compact.Bytes()
		if key, err = objectKey(raw, t.decl.Key); err != nil {
			return topicWriteAnswer{}, err
		}
		if err := t.validate(raw); err != nil {
			return topicWriteAnswer{}, err
		}
		ver, applied, err = t.set(topicWrite{writer: w, holder: holder, epoch: req.Epoch, seq: req.Seq, key: key, raw: raw, header: header})
	}
	if err != nil {
		return topicWriteAnswer{}, err
	}
	return topicWriteAnswer{Key: key, Epoch: ver.Epoch, Seq: ver.Seq, Applied: applied}, nil
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
	defer adm.done()
	sess := adm.sess
	refuse := func(err error) {
		s.auditAdmitted(adm, outcomeLabel(err))
		s.refuse(w, r, err)
	}
	if s.draining.Load() {
		sess.drainNotified.Store(true)
		refuse(Errorf(CodeUnavailable, "%s is draining: watch another endpoint", s.cfg.Component))
		return
	}
	query := r.URL.Query()
	sel, err := parseSelection(t.name, t.decl.Selectors, query, s.cfg.Metrics)
	if err != nil {
		refuse(err)
		return
	}
	var ws *watchStream
	_, err = s.intercept(adm.ctx, &Call{Kind: EntryWatch, Contract: t.contract.Name(), Version: t.contract.Version(),
		Method: t.name, Peer: sess.peer, Header: r.Header}, func(context.Context, *Call) (any, error) {
		ws, err = t.addWatcher(sess, query.Get(protocol.QuerySince), sel)
		return nil, err
	})
	if err != nil {
		refuse(err)
		return
	}
	s.auditAdmitted(adm, outcomeLabel(nil))
	rc := http.NewResponseController(w)
	if r.ProtoMajor == 1 {
		// Own the connection: an idle watcher then costs no goroutine and
		// none of the HTTP server's per-connection buffers.
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.SetReadDeadline(time.Time{})
			limitSendBuffer(conn)
			header := hijackedHeader
			if ws.resumed {
				header = hijackedHeaderResumed
			}
			ws.start(connSink{conn}, header)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", protocol.ContentTypeNDJSON)
	h.Set("Cache-Control", "no-store")
	if ws.resumed {
		h.Set(protocol.HeaderResumed, "1")
	}
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	ws.start(responseSink{w: w, rc: rc}, nil)
	select {
	case <-ws.finished:
	case <-r.Context().Done():
		ws.closeNow()
		<-ws.finished
	}
}

// hijackedHeader starts the answer of a watch stream that owns its
// connection: the body runs until the connection closes.
var (
	hijackedHeader = []byte("HTTP/1.1 200 OK\r\nContent-Type: " + protocol.ContentTypeNDJSON +
		"\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
	hijackedHeaderResumed = []byte("HTTP/1.1 200 OK\r\nContent-Type: " + protocol.ContentTypeNDJSON +
		"\r\nCache-Control: no-store\r\n" + protocol.HeaderResumed + ": 1\r\nConnection: close\r\n\r\n")
)

// watchSendBuffer is the kernel send buffer of a watch connection. Kept
// small, it makes a watcher that reads slowly push back on its stream
// soon, so the changes it has not read yet wait as one latest change per
// key rather than as every change in a kernel buffer: what it reads next
// is at most this much older than the topic.
const watchSendBuffer = 128 << 10

func limitSendBuffer(conn net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if b, ok := conn.(interface{ SetWriteBuffer(int) error }); ok {
		_ = b.SetWriteBuffer(watchSendBuffer)
	}
}
