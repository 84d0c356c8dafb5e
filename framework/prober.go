package framework

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
)

// Endpoint health from the connections, one prober per address per
// process.
//
// Noticing a crash. A killed server process's sockets are closed by its
// kernel, so the client's connections to it see EOF or RST; an idle pooled
// connection always has a read pending, so this is seen within
// milliseconds. A close alone proves nothing: servers close idle
// connections, a draining server closes every connection, a new process
// may already listen at the address. So a close from an address where the
// process holds sessions starts a check of the address: one TCP dial.
// Refused is the heartbeat's rule for "the server is gone"
// ([beatGroup.beat]): every session held there by any client of the
// process is taken out of routing at once. A dial that connects asks every
// heartbeat group there to beat now, so the server that listens says what
// it still holds: the same process keeps the sessions, a new one at the
// same address (an in-place restart) holds none and its answer sends the
// clients to handshake again, a draining one answers draining and its
// sessions are handed over as in any drain. A drain the client heard of
// starts no check at all: hearing it (a draining answer, a heartbeat's
// draining header, a draining refusal) takes the sessions out of routing
// and closes them first, so the closes that end the drain find none held
// there. A network partition closes nothing, so it is bounded, as before,
// by the session TTL through the heartbeats.
//
// Reconnecting. An endpoint whose handshake was refused (nothing listens
// at its address) does not redial on its own backoff: it waits for the
// address's prober, which dials for every waiter and wakes them all when a
// dial connects. The prober spends the waiters' backoffs, not more
// (prober_budget.go): by any moment it has dialled no more often than its
// waiters would have on their own, one dial per step of each one's
// backoff, in every stretch of time no faster than they would have then,
// and never twice within probeInterval. One waiter is dialled for
// as it would have dialled itself (5 ms growing to 100 ms by default), so
// a listener that appears after a long dark time is found within its
// Backoff.Max; two waiters halve that; from four on (a node simulator's
// sessions, one client per node) the address sees one dial per
// probeInterval, however many wait, and a listener is found within it.

// probeInterval is the shortest time between two dials of a waited-for
// address: with enough waiters, the bound on how late a listener is
// noticed, and one dial per interval per address per process the most an
// absent server costs.
const probeInterval = 30 * time.Millisecond

// probeJitter is at most how much later than planned a waiters' dial is
// made, at random, so that processes waiting for one server stay apart
// (only later: the budget is never overspent).
const probeJitter = probeInterval / 10

// probeDialTimeout bounds one dial: a port without a listener refuses at
// once, an unreachable host stays within the interval's count.
const probeDialTimeout = time.Second

// probeListen is how long a check's connection listens for a reset: a
// process being killed may still hold its listener when its connections'
// close arrives, and resets what is queued on it.
const probeListen = 50 * time.Millisecond

// processProbers is the process's probers. It is process-wide on purpose,
// as a connection pool is: the point is one prober per address whatever
// the number of clients, transports and heartbeat senders.
var processProbers = newProbers(clockwork.NewRealClock(), dialProbe)

// dialProbe dials addr over TCP.
func dialProbe(ctx context.Context, addr string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
}

// probers holds one addrProber per address ("host:port").
type probers struct {
	clock clockwork.Clock
	dial  func(ctx context.Context, addr string) (net.Conn, error)

	mu    sync.Mutex
	addrs map[string]*addrProber
	stats map[string]*probeStats // kept after their prober is released
}

// probeStats counts what an address's probers did, for the status of
// crash detection and for tests.
type probeStats struct {
	dials   atomic.Int64 // every dial, checks' and waiters'
	checks  atomic.Int64 // checks a peer's close started
	crashes atomic.Int64 // checks that found nothing listening
}

func newProbers(clock clockwork.Clock, dial func(context.Context, string) (net.Conn, error)) *probers {
	return &probers{clock: clock, dial: dial, addrs: map[string]*addrProber{}, stats: map[string]*probeStats{}}
}

// addrProber is the prober of one address. Lock order: Heartbeats.mu
// (held while a group registers), probers.mu, addrProber.mu; the beatGroup
// methods a check calls take Heartbeats.mu, never under the other two.
type addrProber struct {
	p     *probers
	addr  string
	stats *probeStats

	mu       sync.Mutex
	groups   map[*beatGroup]struct{} // heartbeat groups holding sessions here
	waiters  int                     // endpoints waiting for a listener
	budget   dialBudget              // the dials the waiters would have made
	woken    chan struct{}           // closed when a dial connects; then replaced
	looping  bool                    // the waiters' dial loop runs
	changed  chan struct{}           // tells the loop a waiter came or the last left
	checking bool                    // a check of a peer close is under way
	lastChk  time.Time               // when the last check began
	// announced says a source announced a listener since the last dial:
	// the loop dials at once (announce).
	announced     bool
	lastAnnounced time.Time // when the last announced dial was made
	// planned, if set (by tests), is told when the loop plans each dial,
	// before it waits for it.
	planned func(at time.Time)
}

// at returns the prober of addr, creating it.
func (p *probers) at(addr string) *addrProber {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.addrs[addr]
	if a == nil {
		st := p.stats[addr]
		if st == nil {
			st = &probeStats{}
			p.stats[addr] = st
		}
		a = &addrProber{p: p, addr: addr, stats: st, groups: map[*beatGroup]struct{}{}, woken: make(chan struct{}),
			changed: make(chan struct{}, 1)}
		p.addrs[addr] = a
	}
	return a
}

// statsOf returns what the probers of addr did so far.
func (p *probers) statsOf(addr string) *probeStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.stats[addr]; st != nil {
		return st
	}
	return &probeStats{}
}

// ProbeStats is what the process's probers did at the endpoint URL so
// far: dials (checks' and reconnect waiters'), checks that a peer's close
// started, and checks that found nothing listening. With the handshakes an
// observer sees refused ([ClientObserver]), the dials counts every dial
// the process made to an address while nothing listened there, as a
// benchmark of the reconnect gap reports beside it.
func ProbeStats(rawURL string) (dials, checks, crashes int64) {
	st := processProbers.statsOf(dialAddr(rawURL))
	return st.dials.Load(), st.checks.Load(), st.crashes.Load()
}

// lookup returns the prober of addr, or nil.
func (p *probers) lookup(addr string) *addrProber {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs[addr]
}

// release forgets a's prober once nothing uses it.
func (p *probers) release(a *addrProber) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.groups) == 0 && a.waiters == 0 && !a.looping && !a.checking && p.addrs[a.addr] == a {
		delete(p.addrs, a.addr)
	}
}

// dialAddr is the dial address of an endpoint URL ("host:port").
func dialAddr(raw string) string {
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

// register makes g's sessions subject to the checks of its address.
func (p *probers) register(g *beatGroup) {
	a := p.at(g.addr)
	a.mu.Lock()
	a.groups[g] = struct{}{}
	a.mu.Unlock()
}

// unregister undoes register.
func (p *probers) unregister(g *beatGroup) {
	a := p.lookup(g.addr)
	if a == nil {
		return
	}
	a.mu.Lock()
	delete(a.groups, g)
	a.mu.Unlock()
	p.release(a)
}

// peerClosed is told that the peer at addr closed a connection. It starts
// a check unless no session is held there, or a check is under way or
// began within probeInterval.
func (p *probers) peerClosed(addr string) {
	a := p.lookup(addr)
	if a == nil {
		return
	}
	now := p.clock.Now()
	a.mu.Lock()
	if len(a.groups) == 0 || a.checking || now.Sub(a.lastChk) < probeInterval {
		a.mu.Unlock()
		return
	}
	a.checking, a.lastChk = true, now
	a.mu.Unlock()
	a.stats.checks.Add(1)
	go a.check()
}

// check dials the address once (twice if a dying listener reset it):
// refused takes every session there out of routing; a connection asks the
// groups there to beat now.
func (a *addrProber) check() {
	defer func() {
		a.mu.Lock()
		a.checking = false
		a.mu.Unlock()
		a.p.release(a)
	}()
	err := a.listening(true)
	a.mu.Lock()
	groups := make([]*beatGroup, 0, len(a.groups))
	for g := range a.groups {
		groups = append(groups, g)
	}
	a.mu.Unlock()
	if err != nil {
		a.stats.crashes.Add(1)
		for _, g := range groups {
			g.loseAll(g.allMembers(), stateUnreachable, err)
		}
		return
	}
	for _, g := range groups {
		g.beatNow()
	}
}

// listening dials the address and returns the refusal, or nil when
// something listens there (or the dial failed otherwise: only a refusal
// is proof that nothing listens). A process being killed may still hold
// its listener: a dial then is reset, at once or, with listen, within
// probeListen without a byte, and is made again.
func (a *addrProber) listening(listen bool) error {
	for range 3 {
		a.stats.dials.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), probeDialTimeout)
		c, err := a.p.dial(ctx, a.addr)
		cancel()
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return err
		case errors.Is(err, syscall.ECONNRESET):
			continue
		case err != nil:
			return nil
		}
		if !listen {
			c.Close()
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

// waitListening waits until a dial of the address connects, ctx ends or
// kick fires. It reports whether a listener was found. backoff is the
// waiter's own (with its defaults): the prober dials no more often than
// it would have.
//
// announced holds a token when the waiter's source announced the address
// before the waiter joined (while it was handshaking): the prober takes it
// as an announcement, so it is not lost between the two.
func (a *addrProber) waitListening(ctx context.Context, kick <-chan struct{}, announced chan struct{}, backoff Backoff) bool {
	a.mu.Lock()
	a.waiters++
	w := a.budget.join(a.p.clock.Now(), backoff)
	woken := a.woken
	if !a.looping {
		a.looping = true
		go a.loop()
	}
	select {
	case <-announced:
		a.announced = true
	default:
	}
	a.signal()
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.waiters--
		a.budget.leave(w, a.p.clock.Now())
		if a.waiters == 0 {
			a.signal()
		}
		a.mu.Unlock()
	}()
	select {
	case <-woken:
		return true
	case <-ctx.Done():
	case <-kick:
	}
	return false
}

// announce tells the prober that a source announced a listener at its
// address: while anyone waits, its next dial is made at once (see
// Announced above). Nobody waiting, there is nothing to wake: an endpoint
// that joins later brings its own announcement (waitListening).
func (a *addrProber) announce() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiters == 0 {
		return
	}
	a.announced = true
	a.signal()
}

// signal tells the loop to plan its next dial again. a.mu is held.
func (a *addrProber) signal() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// loop dials while anyone waits, when the budget allows, and wakes every
// waiter when a dial connects.
func (a *addrProber) loop() {
	defer a.p.release(a)
	// The waiters' own refused handshakes were the last dials: the first
	// is planned from the budget too.
	var last time.Time
	for {
		a.mu.Lock()
		if a.waiters == 0 {
			a.looping, a.announced = false, false
			a.budget = dialBudget{}
			select {
			case <-a.changed:
			default:
			}
			a.mu.Unlock()
			return
		}
		now := a.p.clock.Now()
		var at time.Time
		if a.announced {
			// At once, unless an announced dial was made within the
			// interval: announcements never come closer than it.
			at = maxTime(now, a.lastAnnounced.Add(probeInterval))
		} else {
			from := maxTime(now, last.Add(probeInterval))
			at = a.budget.next(from).Add(time.Duration(rand.Int64N(int64(probeJitter))))
		}
		planned := a.planned
		a.mu.Unlock()
		t := a.p.clock.NewTimer(at.Sub(now))
		if planned != nil {
			planned(at)
		}
		select {
		case <-t.Chan():
		case <-a.changed:
			// A waiter came (more budget) or the last one left.
			t.Stop()
			continue
		}
		a.mu.Lock()
		if a.waiters == 0 {
			a.mu.Unlock()
			continue
		}
		a.budget.spend()
		last = a.p.clock.Now()
		if a.announced {
			// This dial, planned or announced, is after the announcement.
			a.announced, a.lastAnnounced = false, last
		}
		a.mu.Unlock()
		if a.listening(false) != nil {
			continue
		}
		a.mu.Lock()
		close(a.woken)
		a.woken = make(chan struct{})
		a.budget.restart()
		a.mu.Unlock()
	}
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// watchedConn is a client connection that tells the process's probers
// when its peer closes it.
type watchedConn struct {
	net.Conn
	addr     string
	reported atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && peerClosedErr(err) && !c.reported.Swap(true) {
		processProbers.peerClosed(c.addr)
	}
	return n, err
}

// peerClosedErr reports whether a read error means the peer closed the
// connection (not that this side closed it or a deadline passed).
func peerClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// watchedDial wraps a dial function so that its connections report their
// peer's close. The default transport dials through it, plain and under
// TLS ([Credentials.Transport] puts TLS over it).
func watchedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, addr: addr}, nil
	}
}
