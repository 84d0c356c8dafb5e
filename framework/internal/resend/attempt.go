package resend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/clienthttp"
	"github.com/lockstep-dev/lockstep/framework/internal/hello"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Request is one attempt's request to an endpoint.
type Request struct {
	// Method is the HTTP method: POST, or GET for a watch stream.
	Method string
	// URL is where it goes: a call's, a topic's or a watch's path under
	// the endpoint's URL.
	URL  string
	Body []byte
	// Parts, when Body is nil, is a body of PartsLen bytes written from
	// several buffers in order: a multi-call's, around its calls' requests
	// (wire.MultiCallBody).
	Parts    net.Buffers
	PartsLen int
	Header   http.Header // the request's own headers, added to the protocol's
	// Stream leaves a successful answer's body open in Attempt.Stream,
	// for a watch stream, instead of reading it whole.
	Stream bool
}

// Attempt is what one attempt got: an answer, or a transport failure.
type Attempt struct {
	Transport    Transport
	Err          error // the transport failure, when Transport is not TransportOK
	Status       int
	Draining     bool
	NotProcessed bool
	// Unrecorded is Lockstep-Unrecorded: the draining server holds no
	// record of the call's idempotency key.
	Unrecorded bool
	Body       []byte
	// URL is where the request went, named (redacted) in the error of an
	// answer that is not in the lockstep error shape; nil for the items of
	// a multi-call, whose errors are. Kept as the request's own URL and
	// written out only for such an answer: a call that succeeds spends
	// nothing on it.
	URL *url.URL
	// Stream is a successful streaming answer's open body; the caller
	// closes it.
	Stream io.ReadCloser
	// Resumed says a watch stream resumes from the request's resume
	// point (Lockstep-Resumed).
	Resumed bool
}

// Facts are what the resend rules look at in a.
func (a Attempt) Facts(safety Safety) Facts {
	f := Facts{Transport: a.Transport, NotProcessed: a.NotProcessed, Draining: a.Draining, Safety: safety}
	if a.Transport == TransportOK && a.Status != http.StatusOK {
		f.Code = a.Failure().Code()
	}
	return f
}

// Failure is the error an attempt ended with, or nil for a success.
func (a Attempt) Failure() *apierror.Error {
	switch {
	case a.Transport != TransportOK:
		return apierror.As(a.Err)
	case a.Status != http.StatusOK:
		at := ""
		if a.URL != nil {
			at = a.URL.Redacted()
		}
		return wire.DecodeErrorStatus(a.Status, at, a.Body)
	}
	return nil
}

// Link is an endpoint as its attempts see it: where it is, how requests
// reach it, and what the client learns from an answer. The client makes
// one per endpoint.
type Link struct {
	// URL is the endpoint's base URL, named in errors.
	URL   string
	HC    *http.Client
	Clock clockwork.Clock
	// MaxResponseBytes bounds an answer read whole.
	MaxResponseBytes int64
	// LastCall is set to the time (unix nanos) of each successful answer:
	// heartbeats skip the sessions calls renewed.
	LastCall *atomic.Int64
	// Resync is called when an answer asks the client to send its full
	// state again (Lockstep-Resync).
	Resync func()
}

// Session is a session as the request path sees it.
type Session interface {
	// Token is the session's token, sent in Lockstep-Session.
	Token() string
	// Pinned says the peer does not handshake: no session travels with
	// its requests, it keeps no idempotency records and speaks no
	// multi-call.
	Pinned() bool
	// Peer is the server the session is with.
	Peer() handshake.Peer
}

// Endpoint is an endpoint as the request path sees it.
type Endpoint interface {
	// Link is how its attempts reach it.
	Link() *Link
	// Routable returns its routable session, or nil.
	Routable() Session
	// State is its state now (hello.Moves).
	State() hello.State
	// Stopped reports whether the endpoint has left the client's set.
	Stopped() bool
	// Lose takes s out of routing in state, for err, if it is still the
	// routable session, and wakes the endpoint to handshake again.
	Lose(s Session, state hello.State, err error)
}

// Target is the endpoint an attempt goes to and the session it goes
// through.
type Target struct {
	E Endpoint
	S Session
}

// Send is the one way the client sends a request to an endpoint: with the
// session, the caller's deadline and the protocol's content type, reading
// the answer whole (bounded by Link.MaxResponseBytes) unless r.Stream.
func (t Target) Send(ctx context.Context, r Request) Attempt {
	l := t.E.Link()
	var body io.Reader = http.NoBody
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	var sent clienthttp.Sent
	req, err := http.NewRequestWithContext(sent.Trace(ctx), r.Method, r.URL, body)
	if err != nil {
		return Attempt{Transport: TransportNotSent, Err: apierror.Errorf(apierror.CodeInternal, "request to %s: %v", r.URL, err)}
	}
	if r.Parts != nil {
		clienthttp.SetBodyParts(req, r.Parts, r.PartsLen)
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if r.Body != nil || r.Parts != nil {
		req.Header.Set("Content-Type", protocol.ContentTypeJSON)
	}
	if r.Stream {
		req.Header.Set("Accept", protocol.ContentTypeNDJSON)
	}
	if !t.S.Pinned() {
		req.Header.Set(protocol.HeaderSession, t.S.Token())
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set(protocol.HeaderTimeout, wire.EncodeTimeout(dl.Sub(l.Clock.Now())))
	}
	resp, err := l.HC.Do(req)
	if err != nil {
		kind := TransportAmbiguous
		if clienthttp.IsDialError(err) || sent.NotSent() {
			kind = TransportNotSent
		}
		return Attempt{Transport: kind, Err: err}
	}
	return l.read(resp, req.URL, r.Stream)
}

// read is what an attempt whose request was answered got: the answer's
// headers, and its body read whole, or for a successful stream left open.
func (l *Link) read(resp *http.Response, u *url.URL, stream bool) Attempt {
	a := Attempt{
		URL:          u,
		Status:       resp.StatusCode,
		Draining:     resp.Header.Get(protocol.HeaderDraining) != "",
		NotProcessed: resp.Header.Get(protocol.HeaderNotProcessed) != "",
		Unrecorded:   resp.Header.Get(protocol.HeaderUnrecorded) != "",
	}
	if resp.StatusCode == http.StatusOK {
		l.LastCall.Store(l.Clock.Now().UnixNano())
		if resp.Header.Get(protocol.HeaderResync) != "" {
			l.Resync()
		}
		if stream {
			a.Stream = resp.Body
			a.Resumed = resp.Header.Get(protocol.HeaderResumed) != ""
			return a
		}
	}
	limit := l.MaxResponseBytes
	if stream {
		limit = 64 << 10 // a refused watch answers a short error
	}
	out, err := wire.ReadAnswer(resp, limit)
	switch {
	case apierror.CodeOf(err) == apierror.CodePayloadTooLarge:
		// Too large to read: the call was processed, and resending it
		// would get the same answer.
		a.Status, a.Body = http.StatusRequestEntityTooLarge, errorBody(apierror.As(err))
	case err != nil:
		// Cut short: whatever it said is lost.
		a.Transport, a.Err = TransportAmbiguous, err
	default:
		a.Body = out
	}
	return a
}

// errorBody is e's wire form, as a server writes it.
func errorBody(e *apierror.Error) []byte {
	b, err := json.Marshal(apierror.ToWire(e))
	if err != nil {
		return []byte(`{"code":"internal","message":"did not encode"}`)
	}
	return b
}

// Settle applies the resend rules to what one attempt got and takes the
// session out of routing when they say so, so the endpoint handshakes
// again; what names the request in errors ("nodestatus Report"). It
// returns the attempt's error, if any. A request whose context ended fails
// with the context's error.
func (t Target) Settle(ctx context.Context, a Attempt, safety Safety, what string) (Decision, *apierror.Error) {
	if ctx.Err() != nil {
		if a.Stream != nil {
			a.Stream.Close()
		}
		return Decision{Action: Fail}, apierror.FromContext(ctx, nil)
	}
	d := Classify(a.Facts(safety))
	err := a.Failure()
	if a.Transport != TransportOK {
		err = apierror.Errorf(apierror.CodeUnavailable, "%s to %s: %v", what, t.E.Link().URL, a.Err)
	}
	if d.Lose != "" {
		var cause error = err
		switch {
		case a.Transport != TransportOK:
			cause = a.Err
		case err == nil:
			cause = apierror.Errorf(apierror.CodeUnavailable, "%s is draining", t.S.Peer().Component)
		}
		t.E.Lose(t.S, d.Lose, cause)
	}
	return d, err
}
