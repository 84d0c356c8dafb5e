// Package hello is what one hello of a client comes to, and the life of
// the endpoint that says it: an endpoint's states and the one table of
// the moves between them ([Moves]), the exchange of a hello for a welcome
// or a refusal ([Ask]), the refusal's details decoded once ([Result]),
// which refusals a server holds open ([Holdable]), how long an endpoint
// waits before its next hello to a draining server ([DrainingPace]), and
// the endpoint's loop that says its hellos, keeps the session one got
// and waits between them as each outcome asks ([Loop]). It is separate
// because these rules are the handshake's client half, apart from the
// client's sessions and routing; the pure negotiation stays in package
// handshake, and the client keeps the endpoint's session, its checks of
// a welcome and its heartbeats, which it gives the loop as func values.
package hello

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/probe"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// State is where an endpoint is in its life; framework.EndpointStatus
// reports it as its string. Every change of state goes through the
// client's endpoint.moveLocked, beside the one table of the moves allowed
// ([Moves]).
type State string

const (
	// Connecting: no hello has had an answer yet, or the server no
	// longer holds the session it had (its next hello is on its way).
	Connecting State = "connecting"
	// Ready: it holds a session that calls are routed to. The endpoint's
	// session is set in this state only.
	Ready State = "ready"
	// Refused: the server refused its last hello, or the client
	// refused the server's welcome.
	Refused State = "refused"
	// Unreachable: its last hello, or a call or heartbeat of its
	// session, had no answer.
	Unreachable State = "unreachable"
	// Draining: the server is draining; it refused the last hello
	// so, or said so to a call or heartbeat of the session.
	Draining State = "draining"
	// Stopped: the client stopped it; nothing moves it again.
	Stopped State = "stopped"
)

// Moves lists, for each state, the states an endpoint may move to.
// A hello's outcome (ready, refused, unreachable, draining) moves it from
// any state but ready and stopped, since it says hello only without a
// session; a session lost to a call or heartbeat moves it out of ready
// only (to connecting, unreachable or draining); ready to ready is a
// pinned endpoint made routable again; stopping moves it from any state
// but stopped.
var Moves = map[State][]State{
	Connecting:  {Ready, Refused, Unreachable, Draining, Stopped},
	Ready:       {Ready, Connecting, Unreachable, Draining, Stopped},
	Refused:     {Ready, Refused, Unreachable, Draining, Stopped},
	Unreachable: {Ready, Refused, Unreachable, Draining, Stopped},
	Draining:    {Ready, Refused, Unreachable, Draining, Stopped},
	Stopped:     nil,
}

// Holdable reports whether a refusal may change when the server that
// made it is replaced (version, fingerprint or release incompatibility):
// only then is it worth holding open.
func Holdable(r handshake.Reason) bool {
	switch r {
	case handshake.ReasonVersionMismatch, handshake.ReasonFingerprintMismatch, handshake.ReasonReleaseConstraint:
		return true
	}
	return false
}

// RejectedWelcome is a welcome the client refused by its own rules (the
// server's release did not satisfy the client's constraint, say): not a
// refusal the server could hold open.
type RejectedWelcome struct{ Err *apierror.Error }

func (r RejectedWelcome) Error() string { return r.Err.Error() }
func (r RejectedWelcome) Unwrap() error { return r.Err }

// Result is what one hello came to: a session S (Err nil), or the
// state it leaves the endpoint in and why. A refusal's details are
// decoded once, here, for every rule that reads them.
type Result[S any] struct {
	Sess  S
	State State
	Err   error
	// Refusal is the refusal the answer's error carries (the server's, or
	// the client's own of a welcome), nil when it carries none.
	Refusal *handshake.Refusal
	// Rejected: the client refused the server's welcome by its own rules.
	Rejected bool
}

// Failed is a hello that came to state, with err and no refusal.
func Failed[S any](state State, err error) Result[S] {
	return Result[S]{State: state, Err: err}
}

// RefusedWith is a hello answered with werr, its refusal decoded once
// from its details: a draining server's refusal leaves the endpoint
// draining, any other answer refused.
func RefusedWith[S any](werr *apierror.Error) Result[S] {
	h := Result[S]{State: Refused, Err: werr}
	var r handshake.Refusal
	if len(werr.Details()) > 0 && json.Unmarshal(werr.Details(), &r) == nil {
		h.Refusal = &r
		if r.Reason == handshake.ReasonDraining {
			h.State = Draining
		}
	}
	return h
}

// Holdable reports whether the hello was refused by the server in a way
// it holds open when asked (?wait=): version, fingerprint or release
// incompatibility. Other refusals (a role the contract does not allow, an
// unknown contract, too many sessions, a welcome the client itself
// rejected) do not change when the server is replaced, so they are
// retried with backoff.
func (h Result[S]) Holdable() bool {
	return h.State == Refused && h.Refusal != nil && !h.Rejected &&
		apierror.CodeOf(h.Err) == apierror.CodeIncompatiblePeer && Holdable(h.Refusal.Reason)
}

// Outcome is what a client's observer is told of a handshake
// (framework.ClientObserver.Handshake): welcome, refused with the
// refusal's reason, error with the code of an answer that was no refusal,
// or the endpoint's state (unreachable) when no answer came.
func (h Result[S]) Outcome() (outcome, reason string) {
	if h.Err == nil {
		return "welcome", ""
	}
	if h.Refusal != nil && h.Refusal.Reason != "" {
		return "refused", string(h.Refusal.Reason)
	}
	var e *apierror.Error
	if errors.As(h.Err, &e) {
		return "error", string(e.Code())
	}
	return string(h.State), ""
}

// Server is where a hello goes: the server's base URL, the client's HTTP
// client, and the bound of the answer it reads.
type Server struct {
	URL   string
	HC    *http.Client
	Limit int64
}

// Ask sends hello to srv (with wait, asking it to hold a refusal for
// incompatible versions open that long) and reads its answer: the
// welcome, with a Result in state Ready and no session yet, or what the
// hello came to instead. The welcome is decoded but not checked: the
// client checks it by its own rules.
func Ask[S any](ctx context.Context, srv Server, hello handshake.Hello, wait string) (handshake.Welcome, Result[S]) {
	body, _ := json.Marshal(hello)
	u := srv.URL + protocol.PathHandshake
	if wait != "" {
		u += "?wait=" + wait
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return handshake.Welcome{}, Failed[S](Unreachable, err)
	}
	req.Header.Set("Content-Type", protocol.ContentTypeJSON)
	resp, err := srv.HC.Do(req)
	if err != nil {
		return handshake.Welcome{}, Failed[S](Unreachable, err)
	}
	answer, err := wire.ReadAnswer(resp, srv.Limit)
	if err != nil {
		return handshake.Welcome{}, Failed[S](Unreachable, err)
	}
	if resp.StatusCode != http.StatusOK {
		return handshake.Welcome{}, RefusedWith[S](wire.DecodeError(resp, answer))
	}
	w, err := handshake.DecodeWelcome(answer)
	if err != nil {
		return handshake.Welcome{}, Failed[S](Refused, apierror.Errorf(apierror.CodeInternal, "welcome from %s does not decode: %v", srv.URL, err))
	}
	return w, Result[S]{State: Ready}
}

// MaxDrainingPace caps the delay between hellos to a draining server
// (unless the backoff's own ceiling is higher; then that is the cap). It
// bounds how late a client learns that the server has gone (its next hello
// then finds nothing listening, or its replacement); a readiness source's
// announcement ends the wait at once.
const MaxDrainingPace = 500 * time.Millisecond

// HeldLongEnough is how long a held handshake must have been held for the
// client to ask again at once.
const HeldLongEnough = 500 * time.Millisecond

// DrainingPace is the delay before the hello after the n-th (from 0)
// refusal in a row by a draining server: from the backoff's ceiling,
// doubling, up to the larger of the backoff's ceiling and MaxDrainingPace,
// then the backoff's jitter (so a delay may exceed the cap by the jitter). A drain lasts
// a second or more (DrainTimeout, DrainQuiet); hellos at the backoff's
// ceiling were about half of all connections in a rolling upgrade, and
// every connection a draining server accepts keeps its listener open
// longer (package framework/internal/conns).
func DrainingPace(b probe.Backoff, n int) time.Duration {
	return probe.Backoff{Base: b.Max, Max: max(b.Max, MaxDrainingPace), Multiplier: 2, Jitter: b.Jitter}.Delay(n)
}

// Why says in a few words why an endpoint (url, in state, whose last
// error was err) carries no request now: its URL and state, then for a
// refusal its reason and the refusal's own sentence (which names both
// sides and what each offers), else the last error. Codes and prefixes
// that the state already says are not repeated.
func Why(url string, state State, err error) string {
	s := url + " " + string(state)
	if err == nil || state == Ready {
		return s
	}
	var ae *apierror.Error
	if !errors.As(err, &ae) {
		return s + ": " + err.Error()
	}
	var r handshake.Refusal
	if json.Unmarshal(ae.Details(), &r) == nil && r.Reason != "" {
		if string(r.Reason) != string(state) {
			s += " (" + string(r.Reason) + ")"
		}
		return s + ": " + r.Message
	}
	if string(ae.Code()) != string(state) {
		s += " (" + string(ae.Code()) + ")"
	}
	return s + ": " + ae.Message()
}
