package framework

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// NewTransport returns the HTTP transport lockstep clients use by default: a
// pool of HTTP/1.1 keep-alive connections per endpoint (up to 256 idle),
// opened as concurrency demands. Calls never queue behind one connection's
// stream limit, the bottleneck of a single multiplexed connection. Share one
// transport among many clients of a process (a node simulator's sessions) by
// passing it as ClientConfig.Transport.
func NewTransport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		// Connections report a peer that closes them, so a killed server
		// is noticed at once (prober.go).
		DialContext:         watchedDial((&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext),
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 5 * time.Second,
		// An empty TLSNextProto keeps TLS connections on HTTP/1.1, so TLS and
		// plain HTTP behave alike: many connections, no shared stream cap.
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
		WriteBufferSize: 16 << 10,
		ReadBufferSize:  16 << 10,
	}
}

// isDialError reports whether err means the request never left: the
// connection could not be made, so no server saw the call.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// checkEndpointURL checks a peer's base URL: http or https, with a host;
// plain http only to loopback unless insecure is allowed.
func checkEndpointURL(raw string, insecure bool) (*url.URL, error) {
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
