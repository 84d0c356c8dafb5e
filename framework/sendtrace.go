package framework

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// sentTrace tells, from the transport's trace, whether a request failed
// before its head was written: a connection was got (so the transport
// reports on this request) but the head never went out, so no server can
// have read it whole, and it is safe to resend anywhere. Go's transport
// does not resend a POST itself when the connection it was given closes
// before the write (a server closing an idle connection, a listener
// resetting a connection it never accepted), least of all on a fresh
// connection; without this the client could not tell such a failure from
// one after the server read the call.
type sentTrace struct {
	gotConn, wroteHead atomic.Bool
}

// trace returns ctx carrying the trace hooks.
func (s *sentTrace) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { s.gotConn.Store(true) },
		WroteHeaders: func() { s.wroteHead.Store(true) },
	})
}

// notSent reports whether the request provably never left (see above). A
// transport that reports nothing (no GotConn: a test's or a wrapper's
// that does not pass the context on) proves nothing.
func (s *sentTrace) notSent() bool { return s.gotConn.Load() && !s.wroteHead.Load() }
