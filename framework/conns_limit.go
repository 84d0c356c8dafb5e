package framework

import (
	"context"
	"crypto/tls"
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
//
// A source is not an identity: one certificate used from many addresses
// (other hosts, or one host's many addresses) was bounded only by
// MaxConns. So a connection is charged to its identity too, from its
// first request that carries a verified certificate (under mutual TLS a
// connection's certificate never changes): Limits.ConnsPerPeer per
// identity, the last quarter of MaxConns kept for identities that hold
// few. A connection beyond them is answered resource_exhausted
// (conns_per_peer, or conns for the reserve) and closed. Until its first
// such request a connection is charged to its source alone, which bounds
// what costs the server before anyone is known.

// connLimiter is the listener [Server.Serve] serves on, beneath TLS: it
// counts the connections it returns until they are closed, and closes at
// once those the bounds refuse.
type connLimiter struct {
	net.Listener
	bound    sharedBound // Limits.MaxConns and ConnsPerSource
	identity sharedBound // Limits.MaxConns and ConnsPerPeer
	metrics  *Metrics    // counts refusals; nil without metrics

	mu         sync.Mutex
	total      int64
	sources    map[string]int64 // open connections by remote IP address
	charged    int64            // open connections charged to an identity
	identities map[string]int64 // open connections by identity
}

func newConnLimiter(l net.Listener, limits Limits, m *Metrics) *connLimiter {
	return &connLimiter{Listener: l, metrics: m, sources: map[string]int64{}, identities: map[string]int64{},
		bound:    sharedBound{max: int64(limits.MaxConns), perPeer: int64(limits.ConnsPerSource)},
		identity: sharedBound{max: int64(limits.MaxConns), perPeer: int64(limits.ConnsPerPeer)}}
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
			ch := &connCharge{limiter: l}
			return countConn(c, ch, func() { ch.close(); l.release(src) }), nil
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

// connCharge is what one connection is charged to beyond its source: the
// identity of its first authenticated request.
type connCharge struct {
	limiter *connLimiter

	mu       sync.Mutex
	identity string // "" until charged
	closed   bool
}

// chargeTo charges the connection to identity, once: nil when it is
// charged to it now or was before, a coded refusal when the identity's
// share (or the reserve) is full. A connection already charged to an
// identity stays charged to it: under mutual TLS its certificate never
// changes.
func (ch *connCharge) chargeTo(identity string) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.identity != "" || ch.closed {
		return nil
	}
	l := ch.limiter
	l.mu.Lock()
	held := l.identities[identity]
	v := l.identity.admit(l.charged, held, 1, 1)
	if v == shareAdmitted {
		l.charged++
		l.identities[identity]++
		ch.identity = identity
	}
	total := l.charged
	l.mu.Unlock()
	switch v {
	case shareOverPeer:
		return overLimit(l.metrics, limitConnsPerPeer, CodeResourceExhausted,
			"this peer holds its limit of %d connections", l.identity.perPeer)
	case shareOverBound:
		return overLimit(l.metrics, limitConns, CodeResourceExhausted,
			"the server holds its limit of %d connections", l.identity.max)
	case shareReserved:
		return overLimit(l.metrics, limitConns, CodeResourceExhausted,
			"peers hold %d of the server's %d connections; the rest are kept for peers holding at most %d", total, l.identity.max, l.identity.little())
	}
	return nil
}

// charged reports whether the connection is charged to an identity.
func (ch *connCharge) charged() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.identity != ""
}

// close gives the connection's identity charge back.
func (ch *connCharge) close() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.closed = true
	if ch.identity == "" {
		return
	}
	l := ch.limiter
	l.mu.Lock()
	l.charged--
	if l.identities[ch.identity]--; l.identities[ch.identity] <= 0 {
		delete(l.identities, ch.identity)
	}
	l.mu.Unlock()
	ch.identity = ""
}

// connChargeKey is the context key of a request's connection charge.
type connChargeKey struct{}

// withConnCharge puts the charge of c (a connection connLimiter accepted,
// under TLS or not) in ctx, for http.Server.ConnContext.
func withConnCharge(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(interface{ connCharge() *connCharge }); ok {
		return context.WithValue(ctx, connChargeKey{}, cc.connCharge())
	}
	return ctx
}

// connChargeOf returns the charge of the connection a request arrived on,
// nil when it was not accepted through a connLimiter.
func connChargeOf(ctx context.Context) *connCharge {
	ch, _ := ctx.Value(connChargeKey{}).(*connCharge)
	return ch
}

// countConn wraps c so that closing it, whoever does (the http.Server, a
// watch stream that hijacked it, a drain), calls release once. A TCP
// connection keeps what *net.TCPConn offers (its descriptor for the
// drain's look at unread bytes, CloseWrite, SetWriteBuffer).
func countConn(c net.Conn, ch *connCharge, release func()) net.Conn {
	if tcp, ok := c.(*net.TCPConn); ok {
		return &countedTCPConn{TCPConn: tcp, charge: ch, release: release}
	}
	return &countedConn{Conn: c, charge: ch, release: release}
}

type countedConn struct {
	net.Conn
	charge  *connCharge
	release func()
	once    sync.Once
}

func (c *countedConn) connCharge() *connCharge { return c.charge }

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

type countedTCPConn struct {
	*net.TCPConn
	charge  *connCharge
	release func()
	once    sync.Once
}

func (c *countedTCPConn) connCharge() *connCharge { return c.charge }

func (c *countedTCPConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(c.release)
	return err
}
