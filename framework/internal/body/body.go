// Package body reads a request's body within its limits, and settles an
// HTTP/1 connection whose request is refused before its body was read, so
// that the peer reads the coded refusal, not a reset, and a body declared
// and never sent cannot hold the connection.
//
// It is separate because these are net/http's rules (deadlines through
// http.ResponseController, MaxBytesReader's lingering close, the discard
// after an answer), not lockstep's: the server's admission decides what
// the limits are and what a refusal is called, and reads bodies through
// Read. It never imports the framework.
package body

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
	"unicode/utf8"
)

// bufs holds the buffers request bodies are read into.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// TooLargeError is Read's refusal of a body over its limit: declared so
// (Declared is its Content-Length, refused before a byte was read), or
// found so while reading (Declared is 0).
type TooLargeError struct {
	Declared, Max int64
}

func (e *TooLargeError) Error() string {
	if e.Declared > 0 {
		return fmt.Sprintf("request body of %d bytes exceeds %d", e.Declared, e.Max)
	}
	return fmt.Sprintf("request body exceeds %d bytes", e.Max)
}

// Read's other refusals: the body did not arrive within its time, or is
// not valid UTF-8. Any other error is the body's read failing.
var (
	ErrTimeout = errors.New("request body not received in time")
	ErrNotUTF8 = errors.New("request body is not valid UTF-8")
)

// Read reads r's body of at most maxBytes within timeout, into a pooled
// buffer: a declared Content-Length over maxBytes is refused before a
// byte is read, the whole body must arrive within timeout, and it must
// be valid UTF-8. Refusals that leave the body unread close the
// connection, after the peer had time to read the refusal
// (CloseAfterRefusal). The release function returns the buffer; the
// bytes are invalid after it.
func Read(w http.ResponseWriter, r *http.Request, maxBytes int64, timeout time.Duration) ([]byte, func(), error) {
	if r.ContentLength > maxBytes {
		CloseAfterRefusal(w, r, timeout)
		return nil, func() {}, &TooLargeError{Declared: r.ContentLength, Max: maxBytes}
	}
	rc := http.NewResponseController(w)
	deadlineSet := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	buf := bufs.Get().(*bytes.Buffer)
	buf.Reset()
	release := func() {
		if buf.Cap() <= 1<<20 {
			bufs.Put(buf)
		}
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(ConnWriter(w), r.Body, maxBytes))
	if deadlineSet && err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		// The deadline stays: net/http discards what is left of the body
		// after the answer, and without one a body that stalled held the
		// connection for good after its refusal. With it, that discard
		// ends at the deadline and the connection is closed.
		release()
		w.Header().Set("Connection", "close")
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return nil, func() {}, &TooLargeError{Max: maxBytes}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, func() {}, ErrTimeout
		}
		return nil, func() {}, err
	}
	body := buf.Bytes()
	if !utf8.Valid(body) {
		release()
		return nil, func() {}, ErrNotUTF8
	}
	return body, release, nil
}

// CloseAfterRefusal makes the answer to a refusal that leaves r's body
// unread close the connection, gently. net/http closes at once after
// answering a peer that asked to close (Connection: close); the kernel
// then resets the socket, since bytes are unread, and the peer, still
// writing its body, may see "connection reset" instead of the coded
// refusal. A body that overruns http.MaxBytesReader makes net/http
// half-close the connection after the answer and wait before closing it,
// so one byte is read through a zero-byte MaxBytesReader. The read
// deadline it sets (timeout, the server's Limits.BodyReadTimeout) stays, so net/http's own
// discard after the answer, which has none, is bounded too. Nothing is
// read unless a body may be on its way (OnTheWire).
func CloseAfterRefusal(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	w.Header().Set("Connection", "close")
	if !OnTheWire(r) {
		return
	}
	if http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout)) != nil {
		return
	}
	var b [1]byte
	_, _ = http.MaxBytesReader(ConnWriter(w), r.Body, 0).Read(b[:])
}

// OnTheWire reports whether r's unread body may be on its way over
// an HTTP/1 connection, where it stands between this request and the
// next: it has one (a length, or chunks), the peer did not ask to be told
// to continue first (Expect: it sends nothing until told), and it is not
// an HTTP/2 stream, which ends on its own.
func OnTheWire(r *http.Request) bool {
	return r.ContentLength != 0 && r.ProtoMajor == 1 && r.Header.Get("Expect") == ""
}

// MaxRefusalDrain is how much of a body a refusal made before reading it
// reads and discards: net/http's own bound for discarding what a handler
// left unread.
const MaxRefusalDrain = 256 << 10

// Settle readies an HTTP/1 connection for a refusal made before
// the request body was read. Left unread, the body breaks the connection
// two ways: net/http closes at once after answering a peer that sent
// Connection: close, and the kernel resets a socket closed with bytes
// unread, so the peer, still writing, may meet the reset before the coded
// refusal; and for a keep-alive peer net/http discards up to 256 KiB
// after the answer with no deadline, so a body declared and never sent
// held the connection for good. So the body is read and discarded here,
// through r.Body (its own framing: nothing past its end is read), up to
// MaxRefusalDrain within timeout. When it ends, the
// connection ends with a FIN or serves the next request; when it is
// longer or does not arrive in time, the answer closes the connection
// (CloseAfterRefusal).
func Settle(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	if !OnTheWire(r) {
		return
	}
	if r.ContentLength <= MaxRefusalDrain {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
			if _, err := io.CopyN(io.Discard, r.Body, MaxRefusalDrain+1); err == io.EOF {
				_ = rc.SetReadDeadline(time.Time{})
				return
			}
		}
	}
	CloseAfterRefusal(w, r, timeout)
}

// ConnWriter returns net/http's own writer under w's wrappers. A body
// limit hit is reported to it (http.MaxBytesReader looks for an unexported
// method), which makes net/http linger before closing; a wrapper hides it.
func ConnWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}
