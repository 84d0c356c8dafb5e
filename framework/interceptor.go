package framework

import (
	"context"
	"net/http"

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
