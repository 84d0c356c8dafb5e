package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/probe"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Heartbeats keeps sessions alive for many clients at once: every interval
// it sends one request per endpoint carrying the tokens of all sessions held
// there, skipping sessions that calls renewed anyway. Share one among the
// clients of a process (a node simulator's 10,000 sessions) through
// ClientConfig.Heartbeats; a client without one gets its own.
type Heartbeats struct {
	logger *slog.Logger
	clock  clockwork.Clock

	mu     sync.Mutex
	groups map[beatKey]*beatGroup
}

// NewHeartbeats returns a heartbeat sender. A nil logger or clock means
// slog.Default() and the real clock.
func NewHeartbeats(logger *slog.Logger, clock clockwork.Clock) *Heartbeats {
	if logger == nil {
		logger = slog.Default()
	}
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Heartbeats{logger: logger, clock: clock, groups: map[beatKey]*beatGroup{}}
}

// beatKey groups sessions that can share a request: same endpoint, same
// transport (and so the same TLS identity).
type beatKey struct {
	url       string
	transport any
}

// transportKey identifies a client's transport for grouping. A transport of
// a type that cannot be compared (a function adapter, say) is identified by
// the client's own HTTP client, so its sessions beat alone.
func transportKey(c *Client) any {
	t := c.hc.Transport
	if t == nil || !reflect.TypeOf(t).Comparable() {
		return c.hc
	}
	return t
}

// beatGroup is the sessions held at one endpoint through one transport.
type beatGroup struct {
	h        *Heartbeats
	key      beatKey
	addr     string // key.url's dial address, the key of its prober
	hc       *http.Client
	members  map[*clientSession]*endpoint
	interval time.Duration
	ttl      time.Duration
	stop     chan struct{}
	done     chan struct{}
	// now asks for a beat at once: the address's prober saw a connection
	// closed and something listening there (framework/internal/probe).
	now chan struct{}
}

// add starts heartbeating sess for e.
func (h *Heartbeats) add(e *endpoint, sess *clientSession) {
	key := beatKey{url: e.url, transport: transportKey(e.c)}
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.groups[key]
	if g == nil {
		g = &beatGroup{h: h, key: key, addr: e.addr, hc: e.c.hc, members: map[*clientSession]*endpoint{},
			interval: sess.heartbeat, ttl: sess.ttl, stop: make(chan struct{}), done: make(chan struct{}),
			now: make(chan struct{}, 1)}
		if g.interval <= 0 {
			g.interval = time.Second
		}
		h.groups[key] = g
		processProbers.Register(g)
		go g.run()
	}
	// The group beats at its first session's interval: a server gives every
	// session the same one.
	g.ttl = min(g.ttl, sess.ttl)
	g.members[sess] = e
}

// remove stops heartbeating sess; the group's loop ends with its last
// member.
func (h *Heartbeats) remove(e *endpoint, sess *clientSession) {
	key := beatKey{url: e.url, transport: transportKey(e.c)}
	h.mu.Lock()
	g := h.groups[key]
	if g == nil {
		h.mu.Unlock()
		return
	}
	delete(g.members, sess)
	last := len(g.members) == 0
	if last {
		delete(h.groups, key)
		close(g.stop)
	}
	h.mu.Unlock()
	if last {
		processProbers.Unregister(g)
		<-g.done
	}
}

func (g *beatGroup) run() {
	defer close(g.done)
	g.h.mu.Lock()
	interval := g.interval
	g.h.mu.Unlock()
	t := g.h.clock.NewTicker(interval)
	defer t.Stop()
	lastOK := g.h.clock.Now()
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
			lastOK = g.h.clock.Now()
			continue
		}
		if g.beat(tokens, members, ttl, g.h.clock.Since(lastOK)) {
			lastOK = g.h.clock.Now()
		}
	}
}

// due returns the sessions no call renewed within half an interval (all
// of them for a zero interval), and the shortest TTL among the group's
// sessions.
func (g *beatGroup) due(interval time.Duration) ([]string, map[string]*clientSession, time.Duration) {
	now := g.h.clock.Now().UnixNano()
	g.h.mu.Lock()
	defer g.h.mu.Unlock()
	tokens := make([]string, 0, len(g.members))
	members := make(map[string]*clientSession, len(g.members))
	for sess, e := range g.members {
		if interval > 0 && time.Duration(now-e.lastCall.Load()) < interval/2 && e.c.writerWatchers.Load() == 0 {
			continue
		}
		tokens = append(tokens, sess.token)
		members[sess.token] = sess
	}
	return tokens, members, g.ttl
}

func (g *beatGroup) endpointOf(sess *clientSession) *endpoint {
	g.h.mu.Lock()
	defer g.h.mu.Unlock()
	return g.members[sess]
}

// beat sends one heartbeat for tokens and applies the answer. It reports
// whether the server answered.
func (g *beatGroup) beat(tokens []string, members map[string]*clientSession, ttl, sinceOK time.Duration) bool {
	body, _ := json.Marshal(heartbeatRequest{Sessions: tokens})
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	go func() {
		select {
		case <-g.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.key.url+protocol.PathHeartbeat, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", protocol.ContentTypeJSON)
	resp, err := g.hc.Do(req)
	if err != nil {
		select {
		case <-g.stop:
			return false
		default:
		}
		// A refused connection means the server is gone; other failures
		// are forgiven until the sessions would have lapsed anyway.
		if isDialError(err) || sinceOK > ttl {
			g.loseAll(members, stateUnreachable, err)
		}
		return false
	}
	answer, err := readAnswer(resp, 16<<20)
	if err != nil || resp.StatusCode != http.StatusOK {
		if err == nil {
			err = decodeWireError(resp, answer)
		}
		g.h.logger.Warn("lockstep: heartbeat failed", "url", g.key.url, "err", err)
		// A proxy answering for a dead server looks like this: give the
		// sessions up once they would have lapsed anyway.
		if sinceOK > ttl {
			g.loseAll(members, stateUnreachable, err)
		}
		return false
	}
	if resp.Header.Get(protocol.HeaderDraining) != "" {
		// Take the sessions out of routing first, then acknowledge the
		// drain for all of them in one request.
		g.loseAll(members, stateDraining, Errorf(CodeUnavailable, "the server is draining"))
		g.closeAll(members)
		return true
	}
	var ans heartbeatAnswer
	if err := json.Unmarshal(answer, &ans); err != nil {
		g.h.logger.Warn("lockstep: heartbeat answer does not decode", "url", g.key.url, "err", err)
		return true
	}
	for _, token := range ans.Lost {
		if sess := members[token]; sess != nil {
			if e := g.endpointOf(sess); e != nil {
				e.lose(sess, stateConnecting, Errorf(CodeHandshakeRequired, "the server no longer holds the session"))
			}
		}
	}
	if len(ans.Topics) > 0 {
		for _, sess := range members {
			if e := g.endpointOf(sess); e != nil && e.c.writerWatchers.Load() > 0 {
				e.c.learnTopicWriters(sess, ans.Topics)
			}
		}
	}
	for _, token := range ans.Resync {
		if sess := members[token]; sess != nil {
			if e := g.endpointOf(sess); e != nil {
				e.c.resync()
			}
		}
	}
	return true
}

// closeAll closes the group's sessions at a draining server in one request,
// briefly and best effort.
func (g *beatGroup) closeAll(members map[string]*clientSession) {
	tokens := make([]string, 0, len(members))
	for token, sess := range members {
		if !sess.closed.Swap(true) {
			tokens = append(tokens, token)
		}
	}
	if len(tokens) > 0 {
		deleteSessions(g.hc, g.key.url, tokens)
	}
}

// allMembers returns every session of the group, keyed by token.
func (g *beatGroup) allMembers() map[string]*clientSession {
	g.h.mu.Lock()
	defer g.h.mu.Unlock()
	m := make(map[string]*clientSession, len(g.members))
	for sess := range g.members {
		m[sess.token] = sess
	}
	return m
}

// ProbeAddr is the dial address the group's sessions are held at, the key
// of its prober (probe.Group).
func (g *beatGroup) ProbeAddr() string { return g.addr }

// Unreachable takes every session of the group out of routing: its
// prober found nothing listening at the address (probe.Group).
func (g *beatGroup) Unreachable(err error) { g.loseAll(g.allMembers(), stateUnreachable, err) }

// BeatNow asks the group to beat at once, for all its sessions: its
// prober saw a connection closed and something listening (probe.Group).
func (g *beatGroup) BeatNow() {
	select {
	case g.now <- struct{}{}:
	default:
	}
}

func (g *beatGroup) loseAll(members map[string]*clientSession, state endpointState, err error) {
	for _, sess := range members {
		if e := g.endpointOf(sess); e != nil {
			e.lose(sess, state, err)
		}
	}
}

// Backoff shapes the delays between reconnect attempts: gRPC's connection
// backoff (exponential, with jitter) with much smaller constants, because
// in lockstep an upgrade's downtime should stay close to the skew between
// the two sides, not to a backoff ceiling. Jitter keeps thousands of
// clients from arriving together. Its fields (Base 5ms, Max 100ms,
// Multiplier 1.6, Jitter 0.2 by default) and Delay are documented with
// the process's probers, which spend the backoffs of the endpoints that
// wait for an address (framework/internal/probe).
type Backoff = probe.Backoff

// processProbers is the process's probers: one per address, however many
// clients, transports and heartbeat senders there are, as with a
// connection pool (framework/internal/probe says how they notice a
// killed server and pace the dials of an absent one).
var processProbers = probe.NewTable(clockwork.NewRealClock(), probe.Dial)

// probers is a table of probers: the process's, or a test's own.
type probers = probe.Table

// dialAddr is the dial address of an endpoint URL ("host:port").
var dialAddr = probe.DialAddr

// ProbeStats is what the process's probers did at the endpoint URL so
// far: dials (checks' and reconnect waiters'), checks that a peer's close
// started, and checks that found nothing listening. With the handshakes an
// observer sees refused ([ClientObserver]), the dials counts every dial
// the process made to an address while nothing listened there, as a
// benchmark of the reconnect gap reports beside it.
func ProbeStats(rawURL string) (dials, checks, crashes int64) {
	st := processProbers.StatsOf(dialAddr(rawURL))
	return st.Dials.Load(), st.Checks.Load(), st.Crashes.Load()
}

// backoffWithDefaults returns b with its zero fields given their defaults.
var backoffWithDefaults = probe.WithDefaults

// watchedDial wraps a dial function so that its connections report their
// peer's close to the process's probers. The default transport dials
// through it, plain and under TLS ([Credentials.Transport] puts TLS over
// it).
func watchedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return probe.WatchedDial(processProbers, dial)
}
