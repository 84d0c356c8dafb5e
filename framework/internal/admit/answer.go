package admit

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/body"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/metrics"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// ReadBody reads an admitted entry's body within the body limits,
// counted among its peer's bodies on their way (ReadPeerBody), and
// answers a refusal itself: one before the body was read with
// [Gate.Refuse], a body refused by its limits with [Gate.Fail]. ok is
// false when it answered; otherwise the caller calls release once done
// with the body.
func (g *Gate[S]) ReadBody(w http.ResponseWriter, r *http.Request, a *Admitted[S]) (b []byte, release func(), ok bool) {
	b, release, refused, err := g.ReadPeerBody(w, r, a.Usage)
	switch {
	case refused != nil:
		g.Refuse(w, r, refused)
	case err != nil:
		g.Fail(w, err)
	default:
		return b, release, true
	}
	return nil, nil, false
}

// ReadPeerBody reads an admitted entry's body (ReadBodyLimit), counted
// among the peer's bodies on their way while it is read. The count, from
// the entry's admission until its body has been read, is bounded by
// Limits.BodiesPerPeer over all the peer's connections and streams
// (limits.Peers.BeginBody). Before it, one certificate's HTTP/2
// connections could each hold hundreds of streams whose bodies never came
// (200 connections of 250 stalled hellos held about 1 GB until the body
// deadline). Beyond the bound the entry is refused resource_exhausted
// before its body is read, counted as bodies_per_peer; the refusal is
// returned as refused, for [Gate.Refuse]: the body is unread and the
// entry unprocessed. The count is apart from the calls in flight, so
// refused hellos held with ?wait= (which count among those) never keep a
// peer's next hello from being read.
func (g *Gate[S]) ReadPeerBody(w http.ResponseWriter, r *http.Request, u *limits.Usage) (b []byte, release func(), refused, err error) {
	end, err := g.cfg.Limits.BeginBody(u)
	if err != nil {
		return nil, nil, err, nil
	}
	defer end()
	b, release, err = g.ReadBodyLimit(w, r, g.cfg.MaxBodyBytes, limits.BodyBytes)
	return b, release, nil, err
}

// ReadBodyLimit reads a request body within the body limits (body.Read:
// the lower of maxBytes and MaxBodyBytes, counted as over which when it
// is the lower one, Limits.BodyReadTimeout, valid UTF-8). A body that
// could not be read as valid is the client's fault (invalid_argument,
// payload_too_large or deadline_exceeded), never "unprocessed": a client
// must not resend garbage.
func (g *Gate[S]) ReadBodyLimit(w http.ResponseWriter, r *http.Request, maxBytes int64, which limits.Name) ([]byte, func(), error) {
	if g.cfg.MaxBodyBytes < maxBytes {
		maxBytes, which = g.cfg.MaxBodyBytes, limits.BodyBytes
	}
	b, release, err := body.Read(w, r, maxBytes, g.cfg.BodyReadTimeout)
	var tooLarge *body.TooLargeError
	switch {
	case err == nil:
		return b, release, nil
	case errors.As(err, &tooLarge):
		return nil, release, limits.Refuse(g.cfg.Count, which, apierror.CodePayloadTooLarge, "%s", tooLarge.Error())
	case errors.Is(err, body.ErrTimeout):
		return nil, release, limits.Refuse(g.cfg.Count, limits.BodyReadTimeout, apierror.CodeDeadlineExceeded, "request body not received within %s", g.cfg.BodyReadTimeout)
	case errors.Is(err, body.ErrNotUTF8):
		return nil, release, apierror.Errorf(apierror.CodeInvalidArgument, "%s", err.Error())
	}
	return nil, release, apierror.Errorf(apierror.CodeInvalidArgument, "request body could not be read: %v", err)
}

// CloseAfterRefusal makes the answer to a refusal that leaves r's body
// unread close the connection, gently (body.CloseAfterRefusal).
func (g *Gate[S]) CloseAfterRefusal(w http.ResponseWriter, r *http.Request) {
	body.CloseAfterRefusal(w, r, g.cfg.BodyReadTimeout)
}

// Refuse answers a request that never reached a handler with err in the
// one error shape: it carries Lockstep-Not-Processed, so the client may
// resend it anywhere. Every check before a handler runs (routing, session,
// draining, limits, admission) answers through Refuse. Most of those
// checks come before the request body is read, so Refuse settles the body
// first (body.Settle): the peer reads the coded refusal, not a reset, and
// a keep-alive connection carries on or closes promptly; after a body was
// read (a handshake's hello) there is nothing left to settle. Refusals of
// the body itself (its limits, ReadBodyLimit) answer through Fail, having
// settled the connection their own way.
func (g *Gate[S]) Refuse(w http.ResponseWriter, r *http.Request, err error) {
	body.Settle(w, r, g.cfg.BodyReadTimeout)
	w.Header().Set(protocol.HeaderNotProcessed, "1")
	if errors.As(err, new(unrecordedRefusal)) {
		w.Header().Set(protocol.HeaderUnrecorded, "1")
	}
	g.writeError(w, err)
}

// Fail answers a request whose handler ran (or may have run) with err: no
// Lockstep-Not-Processed, so only an idempotent call may be resent. The
// body has been read, or refused by its limits, by then.
func (g *Gate[S]) Fail(w http.ResponseWriter, err error) {
	g.writeError(w, err)
}

// writeError writes err in the one error shape, with its code's status,
// marking the answer draining when the server drains. Call it through
// [Gate.Refuse] or [Gate.Fail], which say whether a handler ran.
func (g *Gate[S]) writeError(w http.ResponseWriter, err error) {
	e := apierror.As(err)
	if ow, ok := w.(*ObservedWriter); ok {
		ow.Code = e.Code()
	}
	b, mErr := json.Marshal(apierror.ToWire(e))
	if mErr != nil {
		b = []byte(`{"code":"internal","message":"error did not encode"}`)
	}
	if g.cfg.Draining() {
		MarkDraining(w)
	}
	WriteJSON(w, e.Code().HTTPStatus(), b)
}

// WriteJSON writes a 200-class answer with a JSON body.
func WriteJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", protocol.ContentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// MarkDraining tells the client the server is draining, and closes the
// connection after this answer: no connection to a server that is going
// away returns to a client's pool, where a later call could meet it closed
// without knowing whether it was read.
func MarkDraining(w http.ResponseWriter) {
	h := w.Header()
	h.Set(protocol.HeaderDraining, "1")
	h.Set("Connection", "close")
}

// ObservedWriter remembers the code of the error written through it, for a
// server's observer, and what a handshake answered through it names.
type ObservedWriter struct {
	http.ResponseWriter
	Code     apierror.Code
	Contract string
	Reason   handshake.Reason
	// call is the call answered through it, if any (ObserveAnswer).
	call CallObservation
}

// Unwrap gives http.ResponseController the connection's writer, so the
// body read deadline (ReadBodyLimit) reaches the connection through it.
func (w *ObservedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// CallObservation is one call as the server's observer sees it: the names
// its path gave and when it began. Every call is observed through one,
// once: a call alone and a plain call through the writer that answers it
// (ObserveAnswer), each call of a multi-call on its own.
type CallObservation struct {
	obs                       metrics.ServerObserver
	clock                     clockwork.Clock
	contract, version, method string
	start                     time.Time
}

// ObserveCall begins observing a call; without an observer the
// observation does nothing.
func (g *Gate[S]) ObserveCall(contract, version, method string) CallObservation {
	if g.cfg.Observer == nil {
		return CallObservation{}
	}
	return CallObservation{obs: g.cfg.Observer, clock: g.cfg.Clock, contract: contract, version: version, method: method,
		start: g.cfg.Clock.Now()}
}

// End reports the call with its code ("" for success) and its time.
func (o CallObservation) End(code apierror.Code) {
	if o.obs != nil {
		o.obs.Call(o.contract, o.version, o.method, code, o.clock.Since(o.start))
	}
}

// ObserveAnswer wraps w so that o ends with the code of the error written
// through it, when the returned writer's End is called; without an
// observer w is returned as it is, and the nil writer's End does nothing.
func ObserveAnswer(w http.ResponseWriter, o CallObservation) (http.ResponseWriter, *ObservedWriter) {
	if o.obs == nil {
		return w, nil
	}
	ow := &ObservedWriter{ResponseWriter: w, call: o}
	return ow, ow
}

// End ends the observation of the call answered through w.
func (w *ObservedWriter) End() {
	if w != nil {
		w.call.End(w.Code)
	}
}
