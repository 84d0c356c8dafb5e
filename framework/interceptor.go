package framework

import (
	"context"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

// Call describes one call as interceptors see it, on either side.
type Call struct {
	// Kind is the kind of entry on the server: a call (or batch item, or a
	// call of a multi-call), a handshake, a heartbeat, a session close, a
	// topic write or a watch; server interceptors wrap every kind. On the
	// client it is empty: client interceptors wrap calls only.
	Kind EntryKind
	// Contract, Version and Method name what is called; Version is the
	// contract version the call travels at.
	Contract string
	Version  string
	Method   string
	// Peer is the other side: on the server the client, on the client the
	// server (known only once the call has been routed; empty before).
	Peer handshake.Peer
	// Header holds the call's HTTP headers. On the client, interceptors may
	// add headers (traceparent, auth) before calling next; on the server it
	// is the request's header.
	Header http.Header
	// Request is the decoded request (*Req). For a batch method, the server
	// runs interceptors once per item and Request is the item.
	Request any
	// Batch and Item say whether this is one item of a batch call, and which.
	// On the server, Header of an item whose batch call carried headers of
	// its own for it (docs/protocol.md) is the request's header with the
	// item's added.
	Batch bool
	Item  int
	// ItemContexts are, on the client, the contexts a batch call's items
	// come from ([WithItemContexts]), one per item, or nil.
	ItemContexts []context.Context
	// ItemHeader holds, on the client, the headers of a batch call's items
	// of their own, one per item (nil entries until an interceptor sets
	// one), which travel with the items; nil for a unary call. The server
	// adds an item's to the call's headers for that item.
	ItemHeader []http.Header
	// Endpoint is, on the client, the URL the call was sent to last.
	Endpoint string
}

// CallFunc is one call: it returns the response (*Resp) or an error.
type CallFunc func(ctx context.Context, call *Call) (any, error)

// Interceptor wraps every call: auth, tracing, metrics, fault injection. It
// runs around the handler on the server, and around the whole call
// (routing, blocking and resends included) on the client. On the server it
// wraps every kind of entry, not only calls ([Call.Kind]): for a handshake
// Request is the *handshake.Hello and the result the encoded welcome; for
// a heartbeat and a session close Request is the []string of tokens; for a topic write the raw body; for a watch nil.
type Interceptor func(next CallFunc) CallFunc

// chain composes interceptors so that the first is outermost.
func chain(interceptors []Interceptor, final CallFunc) CallFunc {
	f := final
	for i := len(interceptors) - 1; i >= 0; i-- {
		f = interceptors[i](f)
	}
	return f
}

type callKey struct{}

// CallFromContext returns the call a handler is serving (its peer, version
// and headers), or nil outside a handler.
func CallFromContext(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

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
