// Package heartbeat keeps a client process's sessions alive: every
// interval it sends one request per endpoint (and transport) carrying the
// tokens of every session held there, skipping sessions that calls
// renewed anyway, and applies the answer: sessions the server lost,
// resyncs it asks for, where topics' writers are, and its drain. It is
// apart from the client because one sender is shared by the clients of
// a process (a node simulator's 10,000 sessions), and it knows nothing of
// endpoints' states or routing: each session is a [Member] that is told
// what the answer says of it.
package heartbeat

import (
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/probe"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
)

// Loss is why a session leaves routing.
type Loss int

const (
	Unreachable Loss = iota // the server is gone (or the sessions would have lapsed)
	Draining                // the server is draining
	Gone                    // the server no longer holds the session: handshake again
)

// Member is one session held at an endpoint, as the sender sees it. It
// must be comparable: Remove finds a member by equality.
type Member interface {
	// Token is the session's token.
	Token() string
	// LastCall is when a call to the session's endpoint was last
	// answered (unix nanoseconds): a session so renewed within half an
	// interval is not due.
	LastCall() int64
	// WatchesWriters reports whether the session's client watches
	// server-written topics: then every session beats, since answers say
	// where the topics' writers are.
	WatchesWriters() bool
	// Lose takes the session out of routing, for why.
	Lose(why Loss, err error)
	// LearnTopicWriters is told where topics' writers are.
	LearnTopicWriters(reports []wire.TopicWriterReport)
	// Resync is told that the server asks for a full resync.
	Resync()
	// MarkClosed marks the session closed and reports whether it was
	// open: a session is closed at the server once.
	MarkClosed() bool
}

// Config is what a Sender needs of its process.
type Config struct {
	Logger *slog.Logger
	Clock  clockwork.Clock
	// Probers is the table the sender's groups register with, so that a
	// peer's close checks the sessions held at its address.
	Probers *probe.Table
	// CloseSessions closes sessions at the server at url in one request,
	// briefly and best effort (a drain's acknowledgement).
	CloseSessions func(hc *http.Client, url string, tokens []string)
	// DialError reports whether a request's error means it never left.
	DialError func(error) bool
}

// Sender sends the heartbeats of the sessions added to it.
type Sender struct {
	cfg Config

	mu     sync.Mutex
	groups map[groupKey]*group
}

// New returns a sender.
func New(cfg Config) *Sender {
	return &Sender{cfg: cfg, groups: map[groupKey]*group{}}
}

// Endpoint is where sessions are held and how they are reached.
type Endpoint struct {
	URL    string       // the endpoint's base URL
	Addr   string       // its dial address, the key of its prober
	Client *http.Client // the client's HTTP client
}

// groupKey groups sessions that can share a request: same endpoint, same
// transport (and so the same TLS identity).
type groupKey struct {
	url       string
	transport any
}

// keyOf identifies at's transport for grouping. A transport of a type
// that cannot be compared (a function adapter, say) is identified by the
// client's own HTTP client, so its sessions beat alone.
func keyOf(at Endpoint) groupKey {
	var tr any = at.Client
	if t := at.Client.Transport; t != nil && reflect.TypeOf(t).Comparable() {
		tr = t
	}
	return groupKey{url: at.URL, transport: tr}
}

// group is the sessions held at one endpoint through one transport.
type group struct {
	s        *Sender
	key      groupKey
	addr     string
	hc       *http.Client
	members  map[Member]struct{}
	interval time.Duration
	ttl      time.Duration
	stop     chan struct{}
	done     chan struct{}
	// now asks for a beat at once: the address's prober saw a connection
	// closed and something listening there.
	now chan struct{}
}

// Add starts heartbeating m, held at at, every interval (default 1s),
// within ttl.
func (s *Sender) Add(at Endpoint, m Member, interval, ttl time.Duration) {
	key := keyOf(at)
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[key]
	if g == nil {
		g = &group{s: s, key: key, addr: at.Addr, hc: at.Client, members: map[Member]struct{}{},
			interval: interval, ttl: ttl, stop: make(chan struct{}), done: make(chan struct{}),
			now: make(chan struct{}, 1)}
		if g.interval <= 0 {
			g.interval = time.Second
		}
		s.groups[key] = g
		s.cfg.Probers.Register(g)
		go g.run()
	}
	// The group beats at its first session's interval: a server gives every
	// session the same one.
	g.ttl = min(g.ttl, ttl)
	g.members[m] = struct{}{}
}

// Remove stops heartbeating m; the group's loop ends with its last
// member.
func (s *Sender) Remove(at Endpoint, m Member) {
	key := keyOf(at)
	s.mu.Lock()
	g := s.groups[key]
	if g == nil {
		s.mu.Unlock()
		return
	}
	delete(g.members, m)
	last := len(g.members) == 0
	if last {
		delete(s.groups, key)
		close(g.stop)
	}
	s.mu.Unlock()
	if last {
		s.cfg.Probers.Unregister(g)
		<-g.done
	}
}

func (g *group) run() {
	defer close(g.done)
	clock := g.s.cfg.Clock
	g.s.mu.Lock()
	interval := g.interval
	g.s.mu.Unlock()
	t := clock.NewTicker(interval)
	defer t.Stop()
	lastOK := clock.Now()
	for {
		due := interval
		select {
		case <-g.stop:
			return
		case <-t.Chan():
		case <-g.now:
			// Every session is due: the point is to learn whether the
			// server there still holds them.
			due = 0
		}
		tokens, members, ttl := g.due(due)
		if len(tokens) == 0 {
			lastOK = clock.Now()
			continue
		}
		if g.beat(tokens, members, ttl, clock.Since(lastOK)) {
			lastOK = clock.Now()
		}
	}
}

// due returns the sessions no call renewed within half an interval (all
// of them for a zero interval), and the shortest TTL among the group's
// sessions.
func (g *group) due(interval time.Duration) ([]string, map[string]Member, time.Duration) {
	now := g.s.cfg.Clock.Now().UnixNano()
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	tokens := make([]string, 0, len(g.members))
	members := make(map[string]Member, len(g.members))
	for m := range g.members {
		if interval > 0 && time.Duration(now-m.LastCall()) < interval/2 && !m.WatchesWriters() {
			continue
		}
		tokens = append(tokens, m.Token())
		members[m.Token()] = m
	}
	return tokens, members, g.ttl
}

// held reports whether m is still a member of the group.
func (g *group) held(m Member) bool {
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	_, ok := g.members[m]
	return ok
}
