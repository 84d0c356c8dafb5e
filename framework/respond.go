package framework

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"

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
