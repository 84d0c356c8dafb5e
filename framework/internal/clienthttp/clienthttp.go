// Package clienthttp is where a client's requests meet HTTP: which
// endpoint URLs a client accepts, whether a request that failed provably
// never left (a dial error, or a connection got but no head written: see
// [Sent]), and the best-effort close of sessions at a server. It is
// separate because these are facts about HTTP and Go's transport, not
// about lockstep: the resend rules and the heartbeat senders read them,
// and nothing here knows a client's state.
package clienthttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// IsDialError reports whether err means the request never left: the
// connection could not be made, so no server saw the call.
func IsDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// CheckEndpointURL checks a peer's base URL: http or https, with a host;
// plain http only to loopback unless insecure is allowed.
func CheckEndpointURL(raw string, insecure bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("scheme must be http or https")
	}
	if u.Host == "" {
		return nil, errors.New("host is missing")
	}
	if u.Scheme == "http" && !insecure && !loopbackHost(u.Hostname()) {
		return nil, errors.New("plain http to a non-loopback host needs Insecure")
	}
	return u, nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// DeleteSessions closes sessions at the server at url in one request,
// briefly and best effort.
func DeleteSessions(hc *http.Client, url string, tokens []string) {
	body, _ := json.Marshal(wire.HeartbeatRequest{Sessions: tokens})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url+protocol.PathSession, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", protocol.ContentTypeJSON)
	if resp, err := hc.Do(req); err == nil {
		_, _ = wire.ReadAnswer(resp, 4096)
	}
}

// Sent tells, from the transport's trace, whether a request failed
// before its head was written: a connection was got (so the transport
// reports on this request) but the head never went out, so no server can
// have read it whole, and it is safe to resend anywhere. Go's transport
// does not resend a POST itself when the connection it was given closes
// before the write (a server closing an idle connection, a listener
// resetting a connection it never accepted), least of all on a fresh
// connection; without this the client could not tell such a failure from
// one after the server read the call.
type Sent struct {
	gotConn, wroteHead atomic.Bool
}

// Trace returns ctx carrying the trace hooks.
func (s *Sent) Trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { s.gotConn.Store(true) },
		WroteHeaders: func() { s.wroteHead.Store(true) },
	})
}

// NotSent reports whether the request provably never left (see [Sent]). A
// transport that reports nothing (no GotConn: a test's or a wrapper's
// that does not pass the context on) proves nothing.
func (s *Sent) NotSent() bool { return s.gotConn.Load() && !s.wroteHead.Load() }

// SetBodyParts makes parts, written in order, req's body: its length is
// declared (n bytes, no chunked encoding) and GetBody reads it again from
// its start, as it does for a body in one buffer, so the transport may
// resend it. A multi-call's body travels so (wire.MultiCallBody), its
// calls' requests unbroken and uncopied.
func SetBodyParts(req *http.Request, parts net.Buffers, n int) {
	read := func() io.ReadCloser {
		r := append(net.Buffers(nil), parts...) // Read consumes its own copy
		return io.NopCloser(&r)
	}
	req.Body, req.ContentLength = read(), int64(n)
	req.GetBody = func() (io.ReadCloser, error) { return read(), nil }
}
