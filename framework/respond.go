package framework

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

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
	s.settleUnreadBody(w, r)
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
}

// Unwrap gives http.ResponseController the connection's writer, so the
// body read deadline (readEntryBody) reaches the connection through it.
func (w *observedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
