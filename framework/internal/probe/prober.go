// Package probe watches the addresses of a client process's servers
// through their connections: one prober per address notices a killed
// server from its connections' closes and checks it with one dial, and
// dials an absent server on behalf of every endpoint waiting for it,
// within the dials their own backoffs would have made (budget.go). It is
// apart from the client because it is shared by every client, transport
// and heartbeat sender that uses its table, and knows nothing of
// sessions: a heartbeat group registers as a [Group], and is told to
// beat, or that nothing listens.
package probe

import (
	"context"
	"errors"
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
// (the heartbeat sender's): every session held there by any client of the
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
// (budget.go): by any moment it has dialled no more often than its
// waiters would have on their own, one dial per step of each one's
// backoff, in every stretch of time no faster than they would have then,
// and never twice within Interval. One waiter is dialled for
// as it would have dialled itself (5 ms growing to 100 ms by default), so
// a listener that appears after a long dark time is found within its
// Backoff.Max; two waiters halve that; from four on (a node simulator's
// sessions, one client per node) the address sees one dial per
// Interval, however many wait, and a listener is found within it.

// Interval is the shortest time between two dials of a waited-for
// address: with enough waiters, the bound on how late a listener is
// noticed, and one dial per interval per address per process the most an
// absent server costs.
const Interval = 30 * time.Millisecond

// probeJitter is at most how much later than planned a waiters' dial is
// made, at random, so that processes waiting for one server stay apart
// (only later: the budget is never overspent).
const probeJitter = Interval / 10

// probeDialTimeout bounds one dial: a port without a listener refuses at
// once, an unreachable host stays within the interval's count.
const probeDialTimeout = time.Second

// probeListen is how long a check's connection listens for a reset: a
// process being killed may still hold its listener when its connections'
// close arrives, and resets what is queued on it.
const probeListen = 50 * time.Millisecond

// Dial dials addr over TCP: a table's dial, but in tests.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
}

// Group is what a table tells of a check of the address a group of
// sessions is held at (a heartbeat group).
type Group interface {
	// ProbeAddr is the dial address ("host:port") the group's sessions
	// are held at.
	ProbeAddr() string
	// Unreachable says that nothing listens at the address: every
	// session held there is to be taken out of routing.
	Unreachable(err error)
	// BeatNow asks for a heartbeat at once, for every session: something
	// listens at the address, and its answer says what it still holds.
	BeatNow()
}

// Table holds one prober per address ("host:port"): the probers of the
// clients, transports and heartbeat senders that share it.
type Table struct {
	clock clockwork.Clock
	dial  func(ctx context.Context, addr string) (net.Conn, error)

	mu    sync.Mutex
	addrs map[string]*Prober
	stats map[string]*Stats // kept after their prober is released
}

// Stats counts what an address's probers did, for the status of crash
// detection and for tests.
type Stats struct {
	Dials   atomic.Int64 // every dial, checks' and waiters'
	Checks  atomic.Int64 // checks a peer's close started
	Crashes atomic.Int64 // checks that found nothing listening
}

// NewTable returns a table whose probers dial with dial, on clock.
func NewTable(clock clockwork.Clock, dial func(context.Context, string) (net.Conn, error)) *Table {
	return &Table{clock: clock, dial: dial, addrs: map[string]*Prober{}, stats: map[string]*Stats{}}
}

// Prober is the prober of one address. Lock order: the heartbeat
// sender's (held while a group registers), Table.mu, Prober.mu; the Group
// methods a check calls take the sender's, never under the other two.
type Prober struct {
	p     *Table
	addr  string
	stats *Stats

	mu       sync.Mutex
	groups   map[Group]struct{} // heartbeat groups holding sessions here
	waiters  int                // endpoints waiting for a listener
	budget   dialBudget         // the dials the waiters would have made
	woken    chan struct{}      // closed when a dial connects; then replaced
	looping  bool               // the waiters' dial loop runs
	changed  chan struct{}      // tells the loop a waiter came or the last left
	checking bool               // a check of a peer close is under way
	lastChk  time.Time          // when the last check began
	// announced says a source announced a listener since the last dial:
	// the loop dials at once (announce).
	announced     bool
	lastAnnounced time.Time // when the last announced dial was made
	// planned, if set (by tests), is told when the loop plans each dial,
	// before it waits for it.
	planned func(at time.Time)
}

// At returns the prober of addr, creating it.
func (p *Table) At(addr string) *Prober {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.addrs[addr]
	if a == nil {
		st := p.stats[addr]
		if st == nil {
			st = &Stats{}
			p.stats[addr] = st
		}
		a = &Prober{p: p, addr: addr, stats: st, groups: map[Group]struct{}{}, woken: make(chan struct{}),
			changed: make(chan struct{}, 1)}
		p.addrs[addr] = a
	}
	return a
}

// StatsOf returns what the probers of addr did so far.
func (p *Table) StatsOf(addr string) *Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.stats[addr]; st != nil {
		return st
	}
	return &Stats{}
}

// Lookup returns the prober of addr, or nil.
func (p *Table) Lookup(addr string) *Prober {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs[addr]
}

// release forgets a's prober once nothing uses it.
func (p *Table) release(a *Prober) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.groups) == 0 && a.waiters == 0 && !a.looping && !a.checking && p.addrs[a.addr] == a {
		delete(p.addrs, a.addr)
	}
}

// DialAddr is the dial address of an endpoint URL ("host:port").
func DialAddr(raw string) string {
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

// Register makes g's sessions subject to the checks of its address.
func (p *Table) Register(g Group) {
	a := p.At(g.ProbeAddr())
	a.mu.Lock()
	a.groups[g] = struct{}{}
	a.mu.Unlock()
}

// Unregister undoes Register.
func (p *Table) Unregister(g Group) {
	a := p.Lookup(g.ProbeAddr())
	if a == nil {
		return
	}
	a.mu.Lock()
	delete(a.groups, g)
	a.mu.Unlock()
	p.release(a)
}

// PeerClosed is told that the peer at addr closed a connection. It starts
// a check unless no session is held there, or a check is under way or
// began within Interval.
func (p *Table) PeerClosed(addr string) {
	a := p.Lookup(addr)
	if a == nil {
		return
	}
	now := p.clock.Now()
	a.mu.Lock()
	if len(a.groups) == 0 || a.checking || now.Sub(a.lastChk) < Interval {
		a.mu.Unlock()
		return
	}
	a.checking, a.lastChk = true, now
	a.mu.Unlock()
	a.stats.Checks.Add(1)
	go a.check()
}

// check dials the address once (twice if a dying listener reset it):
// refused takes every session there out of routing; a connection asks the
// groups there to beat now.
func (a *Prober) check() {
	defer func() {
		a.mu.Lock()
		a.checking = false
		a.mu.Unlock()
		a.p.release(a)
	}()
	err := a.listening(true)
	a.mu.Lock()
	groups := make([]Group, 0, len(a.groups))
	for g := range a.groups {
		groups = append(groups, g)
	}
	a.mu.Unlock()
	if err != nil {
		a.stats.Crashes.Add(1)
		for _, g := range groups {
			g.Unreachable(err)
		}
		return
	}
	for _, g := range groups {
		g.BeatNow()
	}
}

// listening dials the address and returns the refusal, or nil when
// something listens there (or the dial failed otherwise: only a refusal
// is proof that nothing listens). A process being killed may still hold
// its listener: a dial then is reset, at once or, with listen, within
// probeListen without a byte, and is made again.
func (a *Prober) listening(listen bool) error {
	for range 3 {
		a.stats.Dials.Add(1)
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
		if err == nil || !PeerClosedErr(err) {
			return nil
		}
	}
	return nil
}

// WaitListening waits until a dial of the address connects, ctx ends or
// kick fires. It reports whether a listener was found. backoff is the
// waiter's own (with its defaults): the prober dials no more often than
// it would have.
//
// announced holds a token when the waiter's source announced the address
// before the waiter joined (while it was handshaking): the prober takes it
// as an announcement, so it is not lost between the two.
func (a *Prober) WaitListening(ctx context.Context, kick <-chan struct{}, announced chan struct{}, backoff Backoff) bool {
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

// Announce tells the prober that a source announced a listener at its
// address: while anyone waits, its next dial is made at once (see
// the package comment). Nobody waiting, there is nothing to wake: an endpoint
// that joins later brings its own announcement (WaitListening).
func (a *Prober) Announce() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiters == 0 {
		return
	}
	a.announced = true
	a.signal()
}

// signal tells the loop to plan its next dial again. a.mu is held.
func (a *Prober) signal() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// loop dials while anyone waits, when the budget allows, and wakes every
// waiter when a dial connects.
func (a *Prober) loop() {
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
			at = maxTime(now, a.lastAnnounced.Add(Interval))
		} else {
			from := maxTime(now, last.Add(Interval))
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
