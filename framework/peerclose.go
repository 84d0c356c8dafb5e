package framework

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A killed server process is noticed from its connections, not at the next
// heartbeat: the kernel closes a dead process's sockets, and the default
// transport's connections (NewTransport) report a peer that closed them
// (EOF or RST on read; an idle pooled connection always has a read
// pending). That alone does not prove the server is gone (servers close
// idle connections too, and a draining one closes every connection), so
// it starts a probe: one TCP dial to the address, at most one in flight
// per address in the process however many connections and clients saw the
// close. A refused dial is the heartbeat's own rule for "the server is
// gone" (beatGroup.beat): every heartbeat group of that address loses its
// sessions as unreachable at once. Anything else (the dial connects, or
// times out) changes nothing, so a network partition, which closes
// nothing, stays bounded by the session TTL as before.

// closeProbes is the process's prober: the heartbeat groups per address
// and the probes in flight.
var closeProbes = &closeProber{groups: map[string]map[*beatGroup]struct{}{}, inflight: map[string]bool{}}

type closeProber struct {
	mu       sync.Mutex
	groups   map[string]map[*beatGroup]struct{}
	inflight map[string]bool
}

// probeTimeout bounds one probe: a dead process's port refuses at once.
const probeTimeout = time.Second

// hostPort is the dial address of an endpoint URL ("host:port").
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

func (p *closeProber) register(g *beatGroup) {
	addr := hostPort(g.key.url)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groups[addr] == nil {
		p.groups[addr] = map[*beatGroup]struct{}{}
	}
	p.groups[addr][g] = struct{}{}
}

func (p *closeProber) unregister(g *beatGroup) {
	addr := hostPort(g.key.url)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.groups[addr], g)
	if len(p.groups[addr]) == 0 {
		delete(p.groups, addr)
	}
}

// peerClosed starts a probe of addr unless one is under way or no session
// is kept alive there.
func (p *closeProber) peerClosed(addr string) {
	p.mu.Lock()
	if p.inflight[addr] || len(p.groups[addr]) == 0 {
		p.mu.Unlock()
		return
	}
	p.inflight[addr] = true
	p.mu.Unlock()
	go p.probe(addr)
}

func (p *closeProber) probe(addr string) {
	defer func() {
		p.mu.Lock()
		delete(p.inflight, addr)
		p.mu.Unlock()
	}()
	err := refused(addr)
	if err == nil {
		return
	}
	p.mu.Lock()
	var gone []*beatGroup
	for g := range p.groups[addr] {
		gone = append(gone, g)
	}
	p.mu.Unlock()
	for _, g := range gone {
		g.loseAll(g.allMembers(), stateUnreachable, err)
	}
}

// refused dials addr and returns the refusal, or nil when something
// listens there. A process being killed may still have its listener when
// its connections' close arrives: the probe's connection is then reset
// without a byte, which sends the probe to dial once more.
func refused(addr string) error {
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		cancel()
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return err
			}
			return nil
		}
		// A live server says nothing until asked; a dying listener resets.
		_ = c.SetReadDeadline(time.Now().Add(probeListen))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if err == nil || !peerClosedErr(err) {
			return nil
		}
	}
	return nil
}

// probeListen is how long a probe's connection listens for a reset.
const probeListen = 100 * time.Millisecond

// watchedConn is a connection of the default transport that tells the
// prober when its peer closes it.
type watchedConn struct {
	net.Conn
	addr     string
	reported atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && peerClosedErr(err) && !c.reported.Swap(true) {
		closeProbes.peerClosed(c.addr)
	}
	return n, err
}

// peerClosedErr reports whether a read error means the peer closed the
// connection (not that this side closed it or a deadline passed).
func peerClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// watchedDial dials as the default transport does and watches the
// connection for its peer's close.
func watchedDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, addr: addr}, nil
	}
}
