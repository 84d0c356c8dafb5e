package framework

import "time"

// ServerObserver receives a server's events, for metrics and logs that
// interceptors cannot see (handshakes, calls refused before any handler).
// [Metrics] implements it with Prometheus. Methods must be cheap
// and safe for concurrent use.
//
// The names an observer is given are the ones the request named: the
// contract, version and method of a call's path, the contract of a hello,
// whether the server serves them or not, and whether the peer was
// authenticated or not. An observer that keeps something per name must
// bound it as [Metrics] does, which counts every name the server does not
// serve under [UnknownLabel]: otherwise anyone who reaches the port adds
// to it with every request.
type ServerObserver interface {
	// Handshake reports a handshake's outcome and its reason: "welcome"
	// (reason ""), "refused" with the refusal reason ("version_mismatch",
	// …), or "error" with the code of a hello that was not admitted
	// (malformed, unauthenticated, over a limit).
	Handshake(contract, outcome, reason string)
	// Call reports a finished call: code is "" on success. Calls of a
	// multi-call are reported one by one.
	Call(contract, version, method string, code Code, took time.Duration)
}

// ClientObserver receives a client's events.
type ClientObserver interface {
	// Handshake reports a handshake with one endpoint, as
	// [ServerObserver.Handshake] does, or "unreachable" (reason "") when no
	// answer came.
	Handshake(contract, endpoint, outcome, reason string)
	// Blocked reports how long a call waited for a compatible peer.
	Blocked(contract string, waited time.Duration)
	// Call reports a finished call as its caller saw it: code is "" on
	// success; took includes blocking and resends.
	Call(contract, version, method string, code Code, took time.Duration)
}
