package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

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
// draining, limits, admission) answers through refuse.
func (s *Server) refuse(w http.ResponseWriter, err error) {
	w.Header().Set(protocol.HeaderNotProcessed, "1")
	s.writeError(w, err)
}

// fail answers a request whose handler ran (or may have run) with err: no
// Lockstep-Not-Processed, so only an idempotent call may be resent.
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
	body, mErr := json.Marshal(e.toWire())
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

var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads a request body of at most limit bytes. The returned release
// function gives the buffer back; the bytes are invalid after it.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, func(), error) {
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	release := func() {
		if buf.Cap() <= 1<<20 {
			bodyBufs.Put(buf)
		}
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		release()
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, func() {}, Errorf(CodePayloadTooLarge, "request body exceeds %d bytes", limit)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, func() {}, Errorf(CodeInvalidArgument, "request body was cut short")
		}
		return nil, func() {}, Errorf(CodeUnavailable, "reading request body: %v", err)
	}
	return buf.Bytes(), release, nil
}

// observedWriter remembers the code of the error written through it, for a
// server's observer.
type observedWriter struct {
	http.ResponseWriter
	code     Code
	contract string
	reason   handshake.Reason
}
