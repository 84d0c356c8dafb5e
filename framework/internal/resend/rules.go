package resend

// The resend rules: the one place that decides, from what one attempt got,
// whether a request is finished, resent, or failed. Every request the client
// makes (unary calls, batches, multi-calls, topic writes, watch streams)
// goes through Classify; docs/design.md shows the rules as a table, and
// rules_test.go checks every combination of their inputs.

import (
	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/hello"
)

// Transport says how far an attempt got before its transport failed.
type Transport uint8

const (
	// TransportOK: an answer arrived whole (a success or an error answer).
	TransportOK Transport = iota
	// TransportNotSent: the connection was never made, so the server saw
	// nothing of the request.
	TransportNotSent
	// TransportAmbiguous: the request may have reached a handler: the
	// connection failed after it was sent, or the answer was cut short.
	TransportAmbiguous
)

// String names k as the resend table does.
func (k Transport) String() string {
	return [...]string{"answered", "not sent", "ambiguous"}[k]
}

// Safety says what a request's resend may cost.
type Safety uint8

const (
	// Unsafe: a second run could apply the call twice.
	Unsafe Safety = iota
	// Idempotent: running it twice is running it once (a method declared
	// idempotent, a topic write, which carries its epoch and sequence, a
	// watch).
	Idempotent
	// Keyed: the call carries Lockstep-Idempotency-Key, so the server
	// instance that ran it answers a resend from its record: a resend must
	// go to that same instance.
	Keyed
)

// String names s as the resend table does.
func (s Safety) String() string {
	return [...]string{"unsafe", "idempotent", "keyed"}[s]
}

// Facts is everything the resend rules look at.
type Facts struct {
	Transport Transport
	// Code is an error answer's code, "" for a success (and for transport
	// failures, which have no answer).
	Code apierror.Code
	// NotProcessed is Lockstep-Not-Processed: no handler ran.
	NotProcessed bool
	// Draining is Lockstep-Draining: the server is shutting down.
	Draining bool
	Safety   Safety
}

// Action is what to do with a request after one attempt.
type Action uint8

const (
	// Done: the request is answered; use the answer.
	Done Action = iota
	// ResendHere: send it again to the same endpoint and session.
	ResendHere
	// Rehandshake: the session is gone; resend once the endpoint (or
	// another) has handshaken again.
	Rehandshake
	// ResendElsewhere: the endpoint is going or unreachable; resend to
	// another routable endpoint, or to this one once it is routable again.
	ResendElsewhere
	// Fail: return the error to the caller with its code.
	Fail
)

// String names a as the resend table does.
func (a Action) String() string {
	return [...]string{"done", "resend here", "re-handshake, resend", "resend elsewhere", "fail"}[a]
}

// Decision is the rules' verdict on one attempt.
type Decision struct {
	Action Action
	// Lose is the state the endpoint's session leaves routing in (the
	// endpoint then handshakes again); "" leaves the session routable.
	Lose hello.State
}

// MaxResendsHere bounds how many times in a row one request is resent to
// the same endpoint; after that it is treated as an idempotent request and
// resent elsewhere, so a server that keeps cutting connections cannot hold
// a caller forever.
const MaxResendsHere = 2

// Classify applies the resend rules to one attempt. A request whose
// context ended is never classified: it fails with its context's error.
func Classify(f Facts) Decision {
	switch f.Transport {
	case TransportNotSent:
		// The server saw nothing: resending is safe for every call.
		return Decision{ResendElsewhere, hello.Unreachable}
	case TransportAmbiguous:
		switch f.Safety {
		case Keyed:
			// Only the instance that may have run it holds its record.
			return Decision{ResendHere, ""}
		case Idempotent:
			return Decision{ResendElsewhere, hello.Unreachable}
		}
		// A handler may have run: the caller is told, not the call resent.
		return Decision{Fail, ""}
	}
	if f.Code == "" {
		if f.Draining {
			return Decision{Done, hello.Draining}
		}
		return Decision{Done, ""}
	}
	resendable := f.NotProcessed || f.Safety != Unsafe
	sessionGone := f.Code == apierror.CodeHandshakeRequired || f.Code == apierror.CodeIncompatiblePeer
	switch {
	case f.Draining && (f.NotProcessed || resendable && sessionGone):
		// The server is going: handshaking with it again is pointless.
		return Decision{ResendElsewhere, hello.Draining}
	case resendable && sessionGone:
		// The server does not hold the session (expired, closed, from
		// before a restart) or no longer speaks its version.
		return Decision{Rehandshake, hello.Connecting}
	case f.Draining:
		return Decision{Fail, hello.Draining}
	}
	return Decision{Fail, ""}
}
