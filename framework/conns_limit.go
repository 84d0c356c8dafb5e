package framework

import (
	"net"
	"sync"
)

// The connections a server holds. A connection costs a file descriptor, a
// goroutine and buffers from its accept on, before any request,
// certificate or identity is known: one source that held connections open
// (a keep-alive GET /healthz now and then needs no certificate) used up
// the process's descriptors, after which Accept failed and net/http's
// accept loop backed off (up to a second at a time) for every peer, and
// the process could open nothing else. So open connections are a bound
// shared by their sources (share.go): Limits.MaxConns over all of them,
// Limits.ConnsPerSource per remote IP address, the last quarter kept for
// sources that hold few. A connection beyond them is closed as it is
// accepted, unread, and the accept loop goes straight on to the next, so
// an honest peer queued behind a flood is accepted at once.

// connLimiter is the listener [Server.Serve] serves on, beneath TLS: it
// counts the connections it returns until they are closed, and closes at
// once those the bounds refuse.
type connLimiter struct {
	net.Listener
	bound   sharedBound
	metrics *Metrics // counts refusals; nil without metrics

	mu      sync.Mutex
	total   int64
	sources map[string]int64 // open connections by remote IP address
}

func newConnLimiter(l net.Listener, limits Limits, m *Metrics) *connLimiter {
	return &connLimiter{Listener: l, metrics: m, sources: map[string]int64{},
		bound: sharedBound{max: int64(limits.MaxConns), perPeer: int64(limits.ConnsPerSource)}}
}

// Accept returns the next connection the bounds admit.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := connSource(c)
		if l.admit(src) {
			return countConn(c, func() { l.release(src) }), nil
		}
		_ = c.Close()
	}
}

// admit counts a new connection of src, or counts its refusal.
func (l *connLimiter) admit(src string) bool {
	l.mu.Lock()
	v := l.bound.admit(l.total, l.sources[src], 1, 1)
	if v == shareAdmitted {
		l.total++
		l.sources[src]++
	}
	l.mu.Unlock()
	switch v {
	case shareOverPeer:
		l.metrics.limitRefused(limitConnsPerSource)
	case shareOverBound, shareReserved:
		l.metrics.limitRefused(limitConns)
	}
	return v == shareAdmitted
}

func (l *connLimiter) release(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.sources[src]--; l.sources[src] <= 0 {
		delete(l.sources, src)
	}
}

// connSource is what a connection's source is for its bounds: its remote
// IPv4 address, or the /64 of its IPv6 address. One IPv6 host is handed
// a /64 (a Kubernetes node's pods share one), and counted per address it
// could open a connection from each of its 2^64 and hold every
// connection the bounds keep for others.
func connSource(c net.Conn) string {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return c.RemoteAddr().String()
	}
	if ip4 := a.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return (&net.IPNet{IP: a.IP.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// countConn wraps c so that closing it, whoever does (the http.Server, a
// watch stream that hijacked it, a drain), calls release once. A TCP
// connection keeps what *net.TCPConn offers (its descriptor for the
// drain's look at unread bytes, CloseWrite, SetWriteBuffer).
func countConn(c net.Conn, release func()) net.Conn {
	if tcp, ok := c.(*net.TCPConn); ok {
		return &countedTCPConn{TCPConn: tcp, release: release}
	}
	return &countedConn{Conn: c, release: release}
}

type countedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

type countedTCPConn struct {
	*net.TCPConn
	release func()
	once    sync.Once
}

func (c *countedTCPConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(c.release)
	return err
}
