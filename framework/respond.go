package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/lockstep-dev/lockstep/handshake"
)

// writeJSON writes a 200-class answer with a JSON body.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes err in the one error shape, with its code's status.
// notProcessed tells the client the call never reached a handler, so it may
// resend it anywhere.
func writeError(w http.ResponseWriter, err error, draining, notProcessed bool) {
	e := asError(err)
	if ow, ok := w.(*observedWriter); ok {
		ow.code = e.Code()
	}
	body, mErr := json.Marshal(e.toWire())
	if mErr != nil {
		body = []byte(`{"code":"internal","message":"error did not encode"}`)
	}
	h := w.Header()
	if draining {
		markDraining(w)
	}
	if notProcessed {
		h.Set(HeaderNotProcessed, "1")
	}
	writeJSON(w, e.Code().HTTPStatus(), body)
}

// markDraining tells the client the server is draining, and closes the
// connection after this answer: no connection to a server that is going
// away returns to a client's pool, where a later call could meet it closed
// without knowing whether it was read.
func markDraining(w http.ResponseWriter) {
	h := w.Header()
	h.Set(HeaderDraining, "1")
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
