package limits

import (
	"context"
	"crypto/tls"
	"net"
	"sync"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/share"
)

// The connections a server holds. A connection costs a file descriptor, a
// goroutine and buffers from its accept on, before any request,
// certificate or identity is known: one source that held connections open
// (a keep-alive GET /healthz now and then needs no certificate) used up
// the process's descriptors, after which Accept failed and net/http's
// accept loop backed off (up to a second at a time) for every peer, and
// the process could open nothing else. So open connections are a bound
// shared by their sources (package share): Limits.MaxConns over all of them,
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

// Listener is the listener the server serves on, beneath TLS: it
// counts the connections it returns until they are closed, and closes at
// once those the bounds refuse.
type Listener struct {
	net.Listener
	bound    share.Bound // Limits.MaxConns and ConnsPerSource
	identity share.Bound // Limits.MaxConns and ConnsPerPeer
	count    Counter     // counts refusals

	mu         sync.Mutex
	total      int64
	sources    map[string]int64 // open connections by remote IP address
	charged    int64            // open connections charged to an identity
	identities map[string]int64 // open connections by identity
}

// NewListener bounds the connections l accepts by cfg (its defaults
// filled), counting refusals with count.
func NewListener(l net.Listener, cfg Config, count Counter) *Listener {
	return &Listener{Listener: l, count: count, sources: map[string]int64{}, identities: map[string]int64{},
		bound:    share.Bound{Max: int64(cfg.MaxConns), PerPeer: int64(cfg.ConnsPerSource)},
		identity: share.Bound{Max: int64(cfg.MaxConns), PerPeer: int64(cfg.ConnsPerPeer)}}
}

// Accept returns the next connection the bounds admit.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := connSource(c)
		if l.admit(src) {
			ch := &Charge{limiter: l}
			return countConn(c, ch, func() { ch.close(); l.release(src) }), nil
		}
		_ = c.Close()
	}
}

// admit counts a new connection of src, or counts its refusal.
func (l *Listener) admit(src string) bool {
	l.mu.Lock()
	v := l.bound.Admit(l.total, l.sources[src], 1, 1)
	if v == share.Admitted {
		l.total++
		l.sources[src]++
	}
	l.mu.Unlock()
	if l.count != nil {
		switch v {
		case share.OverPeer:
			l.count(ConnsPerSource)
		case share.OverBound, share.Reserved:
			l.count(Conns)
		}
	}
	return v == share.Admitted
}

func (l *Listener) release(src string) {
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

// Charge is what one connection is charged to beyond its source: the
// identity of its first authenticated request.
type Charge struct {
	limiter *Listener

	mu       sync.Mutex
	identity string // "" until charged
	closed   bool
}

// ChargeTo charges the connection to identity, once: nil when it is
// charged to it now or was before, a coded refusal when the identity's
// share (or the reserve) is full. A connection already charged to an
// identity stays charged to it: under mutual TLS its certificate never
// changes.
func (ch *Charge) ChargeTo(identity string) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.identity != "" || ch.closed {
		return nil
	}
	l := ch.limiter
	l.mu.Lock()
	held := l.identities[identity]
	v := l.identity.Admit(l.charged, held, 1, 1)
	if v == share.Admitted {
		l.charged++
		l.identities[identity]++
		ch.identity = identity
	}
	total := l.charged
	l.mu.Unlock()
	switch v {
	case share.OverPeer:
		return Refuse(l.count, ConnsPerPeer, apierror.CodeResourceExhausted,
			"this peer holds its limit of %d connections", l.identity.PerPeer)
	case share.OverBound:
		return Refuse(l.count, Conns, apierror.CodeResourceExhausted,
			"the server holds its limit of %d connections", l.identity.Max)
	case share.Reserved:
		return Refuse(l.count, Conns, apierror.CodeResourceExhausted,
			"peers hold %d of the server's %d connections; the rest are kept for peers holding at most %d", total, l.identity.Max, l.identity.Little())
	}
	return nil
}

// Charged reports whether the connection is charged to an identity.
func (ch *Charge) Charged() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.identity != ""
}

// close gives the connection's identity charge back.
func (ch *Charge) close() {
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

// chargeKey is the context key of a request's connection charge.
type chargeKey struct{}

// WithCharge puts the charge of c (a connection a Listener accepted,
// under TLS or not) in ctx, for http.Server.ConnContext.
func WithCharge(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(interface{ connCharge() *Charge }); ok {
		return context.WithValue(ctx, chargeKey{}, cc.connCharge())
	}
	return ctx
}

// ChargeOf returns the charge of the connection a request arrived on,
// nil when it was not accepted through a Listener.
func ChargeOf(ctx context.Context) *Charge {
	ch, _ := ctx.Value(chargeKey{}).(*Charge)
	return ch
}

// countConn wraps c so that closing it, whoever does (the http.Server, a
// watch stream that hijacked it, a drain), calls release once. A TCP
// connection keeps what *net.TCPConn offers (its descriptor for the
// drain's look at unread bytes, CloseWrite, SetWriteBuffer).
func countConn(c net.Conn, ch *Charge, release func()) net.Conn {
	if tcp, ok := c.(*net.TCPConn); ok {
		return &countedTCPConn{TCPConn: tcp, charge: ch, release: release}
	}
	return &countedConn{Conn: c, charge: ch, release: release}
}

type countedConn struct {
	net.Conn
	charge  *Charge
	release func()
	once    sync.Once
}

func (c *countedConn) connCharge() *Charge { return c.charge }

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

type countedTCPConn struct {
	*net.TCPConn
	charge  *Charge
	release func()
	once    sync.Once
}

func (c *countedTCPConn) connCharge() *Charge { return c.charge }

func (c *countedTCPConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(c.release)
	return err
}
