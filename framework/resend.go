package framework

// The resend rules: the one place that decides, from what one attempt got,
// whether a request is finished, resent, or failed. Every request the client
// makes (unary calls, batches, multi-calls, topic writes, watch streams)
// goes through classify; docs/design.md shows the rules as a table, and
// resend_test.go checks every combination of their inputs.

// transportKind says how far an attempt got before its transport failed.
type transportKind uint8

const (
	// transportOK: an answer arrived whole (a success or an error answer).
	transportOK transportKind = iota
	// transportNotSent: the connection was never made, so the server saw
	// nothing of the request.
	transportNotSent
	// transportAmbiguous: the request may have reached a handler: the
	// connection failed after it was sent, or the answer was cut short.
	transportAmbiguous
)

func (k transportKind) String() string {
	return [...]string{"answered", "not sent", "ambiguous"}[k]
}

// resendSafety says what a request's resend may cost.
type resendSafety uint8

const (
	// unsafeToResend: a second run could apply the call twice.
	unsafeToResend resendSafety = iota
	// idempotentCall: running it twice is running it once (a method declared
	// idempotent, a topic write, which carries its epoch and sequence, a
	// watch).
	idempotentCall
	// keyed: the call carries Lockstep-Idempotency-Key, so the server
	// instance that ran it answers a resend from its record: a resend must
	// go to that same instance.
	keyed
)

func (s resendSafety) String() string {
	return [...]string{"unsafe", "idempotent", "keyed"}[s]
}

// attemptFacts is everything the resend rules look at.
type attemptFacts struct {
	transport transportKind
	// code is an error answer's code, "" for a success (and for transport
	// failures, which have no answer).
	code Code
	// notProcessed is Lockstep-Not-Processed: no handler ran.
	notProcessed bool
	// draining is Lockstep-Draining: the server is shutting down.
	draining bool
	safety   resendSafety
}

// resendAction is what to do with a request after one attempt.
type resendAction uint8

const (
	// actDone: the request is answered; use the answer.
	actDone resendAction = iota
	// actResendHere: send it again to the same endpoint and session.
	actResendHere
	// actRehandshake: the session is gone; resend once the endpoint (or
	// another) has handshaken again.
	actRehandshake
	// actResendElsewhere: the endpoint is going or unreachable; resend to
	// another routable endpoint, or to this one once it is routable again.
	actResendElsewhere
	// actFail: return the error to the caller with its code.
	actFail
)

func (a resendAction) String() string {
	return [...]string{"done", "resend here", "re-handshake, resend", "resend elsewhere", "fail"}[a]
}

// decision is the rules' verdict on one attempt.
type decision struct {
	action resendAction
	// lose is the state the endpoint's session leaves routing in (the
	// endpoint then handshakes again); "" leaves the session routable.
	lose endpointState
}

// maxResendsHere bounds how many times in a row one request is resent to
// the same endpoint; after that it is treated as an idempotent request and
// resent elsewhere, so a server that keeps cutting connections cannot hold
// a caller forever.
const maxResendsHere = 2

// classify applies the resend rules to one attempt. A request whose
// context ended is never classified: it fails with its context's error.
func classify(f attemptFacts) decision {
	switch f.transport {
	case transportNotSent:
		// The server saw nothing: resending is safe for every call.
		return decision{actResendElsewhere, stateUnreachable}
	case transportAmbiguous:
		switch f.safety {
		case keyed:
			// Only the instance that may have run it holds its record.
			return decision{actResendHere, ""}
		case idempotentCall:
			return decision{actResendElsewhere, stateUnreachable}
		}
		// A handler may have run: the caller is told, not the call resent.
		return decision{actFail, ""}
	}
	if f.code == "" {
		if f.draining {
			return decision{actDone, stateDraining}
		}
		return decision{actDone, ""}
	}
	resendable := f.notProcessed || f.safety != unsafeToResend
	sessionGone := f.code == CodeHandshakeRequired || f.code == CodeIncompatiblePeer
	switch {
	case f.draining && (f.notProcessed || resendable && sessionGone):
		// The server is going: handshaking with it again is pointless.
		return decision{actResendElsewhere, stateDraining}
	case resendable && sessionGone:
		// The server does not hold the session (expired, closed, from
		// before a restart) or no longer speaks its version.
		return decision{actRehandshake, stateConnecting}
	case f.draining:
		return decision{actFail, stateDraining}
	}
	return decision{actFail, ""}
}
