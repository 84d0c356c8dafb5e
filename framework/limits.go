package framework

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/lockstep-dev/lockstep/framework/internal/conns"
)

// Limits bound what one peer may take of a server, so that no single
// identity can lock the others out or exhaust the server's memory. Zero
// fields take the defaults named on each; the defaults sit above the
// project's own loads (one node-simulator identity holding 10,000 sessions
// heartbeating at 1 Hz, one client making about 36,000 calls a second). Each
// limit is answered with its documented code (docs/security.md) and
// counted in lockstep_limit_refusals_total by limit (docs/operations.md).
//
// A peer is its authenticated identity under mutual TLS. Without it a peer
// is only what it claims, so limits are kept per (claimed component, remote
// IP address): a bound on one misbehaving process, not on an attacker who
// can spread over addresses.
type Limits struct {
	// SessionsPerPeer bounds the live sessions of one peer; default a
	// quarter of ServerConfig.MaxSessions (25,000), and it must stay below
	// MaxSessions so that no peer can take them all. Beyond it a handshake
	// gets resource_exhausted. Since a few peers at their shares would
	// still take them all, the last quarter of MaxSessions is kept for
	// peers that hold few sessions (docs/security.md, "Shared bounds").
	SessionsPerPeer int
	// WatchersPerSession and WatchersPerPeer bound open watch streams;
	// defaults 256 and 4,096 (a topic's own bound, [WithMaxWatchers], is
	// 10,000). Beyond them a watch gets resource_exhausted.
	WatchersPerSession int
	WatchersPerPeer    int
	// InFlightPerPeer bounds the calls and topic writes one peer has
	// running at once, over all its sessions, and the refused hellos it
	// has held with ?wait=; default 8,192
	// (ServerConfig.MaxInFlightPerSession bounds each session). Beyond it a
	// call gets resource_exhausted, unprocessed, and a refused hello its
	// refusal at once.
	InFlightPerPeer int
	// BodiesPerPeer bounds the request bodies one peer has on their way at
	// once, over all its connections and streams: every entry counts from
	// its admission until its body has been read (a hello, a heartbeat's
	// or a session close's list of sessions, a call's, a topic write's, a
	// plain call's request). An honest peer's bodies arrive with their
	// headers, so it has about as many on their way as it makes requests
	// at that instant; a body that stalls holds a stream, a goroutine and
	// its buffers until Limits.BodyReadTimeout, and HTTP/2 multiplies
	// streams by connections (200 connections of 250 stalled hellos from
	// one certificate held about 1 GB). Default 1,024. Beyond it an entry
	// gets resource_exhausted, unprocessed and unread.
	BodiesPerPeer int
	// RequestsPerSecond and Burst bound one peer's request rate (every entry
	// counts once: a handshake, a call or multi-call request, a topic write,
	// a watch, a heartbeat, a session close); defaults 100,000/s with a
	// burst of 20,000. Beyond it a request gets resource_exhausted,
	// unprocessed.
	RequestsPerSecond float64
	Burst             int
	// BatchItems bounds the items of one batch call; default 1,000. A
	// contract may set a lower bound per method (its maxItems). Beyond it
	// the call gets invalid_argument.
	BatchItems int
	// BodyReadTimeout bounds the time to receive a request's whole body,
	// from its headers on, on every path (those that read no body too);
	// default 10s. A body that trickles in slower gets
	// deadline_exceeded and its connection is closed. It also bounds the
	// wait for the rest of a body refused before it was read (see
	// docs/security.md), after which the refusal closes the connection.
	BodyReadTimeout time.Duration
	// MaxConns bounds the connections the server holds open at once, over
	// every source, and ConnsPerSource those of one remote IP address
	// (IPv6: one /64), counted from their accept on, before any request or certificate is
	// read (so a source is an address, not an identity); the last quarter
	// is kept for sources that hold few (docs/security.md, "Shared
	// bounds"). A connection beyond them is closed as it is accepted,
	// unread. Defaults: 100,000, or three quarters of the process's
	// file-descriptor limit where that is lower, so that connections
	// cannot use the descriptors up and stall the accept loop for every
	// peer; and half of MaxConns. [Server.Serve] applies them; a server
	// embedded with [Server.ServeHTTP] is bounded by its own listener.
	MaxConns       int
	ConnsPerSource int
	// ConnsPerPeer bounds the connections one identity holds open, over
	// every source it connects from, counted from the connection's first
	// request that carries a verified client certificate (mutual TLS
	// only: without it a peer has no identity before its requests are
	// read); the last quarter of MaxConns is kept for identities that
	// hold few. A connection beyond it is answered resource_exhausted
	// and closed. Default a quarter of MaxConns.
	ConnsPerPeer int
	// WatchQueuedBytes bounds the bytes of changes a watcher that does not
	// read may have waiting for it (beyond a small socket buffer); default
	// 4 MiB. A watcher over it is closed with an overflow frame; it resumes
	// with a fresh snapshot when it reads again.
	WatchQueuedBytes int64
}

// limit names one of a server's bounds: the limit label of
// lockstep_limit_refusals_total, so an operator sees which bound is being
// hit (docs/operations.md says what each one means and what to alert on).
type limit string

const (
	limitRate                limit = "rate"                   // Limits.RequestsPerSecond and Burst
	limitInFlightPerPeer     limit = "in_flight_per_peer"     // Limits.InFlightPerPeer
	limitInFlightPerSession  limit = "in_flight_per_session"  // ServerConfig.MaxInFlightPerSession
	limitSessions            limit = "sessions"               // ServerConfig.MaxSessions
	limitSessionsPerPeer     limit = "sessions_per_peer"      // Limits.SessionsPerPeer
	limitWatchersPerSession  limit = "watchers_per_session"   // Limits.WatchersPerSession
	limitWatchersPerPeer     limit = "watchers_per_peer"      // Limits.WatchersPerPeer
	limitWatchersPerTopic    limit = "watchers_per_topic"     // WithMaxWatchers
	limitWatchQueuedBytes    limit = "watch_queued_bytes"     // Limits.WatchQueuedBytes: a stream closed with an overflow frame
	limitWatchQueuedKeys     limit = "watch_queued_keys"      // twice WithMaxKeys dirty keys: a stream closed with an overflow frame
	limitTopicKeys           limit = "topic_keys"             // WithMaxKeys
	limitTopicBytes          limit = "topic_bytes"            // WithMaxBytes
	limitTopicKeysPerWriter  limit = "topic_keys_per_writer"  // WithMaxKeysPerWriter
	limitTopicBytesPerWriter limit = "topic_bytes_per_writer" // WithMaxBytesPerWriter
	limitConns               limit = "conns"                  // Limits.MaxConns: a connection closed as it is accepted
	limitConnsPerSource      limit = "conns_per_source"       // Limits.ConnsPerSource: the same
	limitConnsPerPeer        limit = "conns_per_peer"         // Limits.ConnsPerPeer: resource_exhausted, the connection closed
	limitBodiesPerPeer       limit = "bodies_per_peer"        // Limits.BodiesPerPeer
	limitBatchItems          limit = "batch_items"            // Limits.BatchItems or a method's maxItems
	limitMultiCalls          limit = "multi_calls"            // MaxMultiCalls
	limitBodyBytes           limit = "body_bytes"             // ServerConfig.MaxBodyBytes
	limitBodyReadTimeout     limit = "body_read_timeout"      // Limits.BodyReadTimeout
	limitHelloBytes          limit = "hello_bytes"            // handshake.MaxHelloBytes
	limitNameBytes           limit = "name_bytes"             // handshake.MaxNameBytes
	limitOffers              limit = "offers"                 // handshake.MaxOffers
)

// The shares of a topic's watchers (docs/security.md, "Shared bounds"),
// and what one watcher may name.
const (
	limitWatchersPerTopicPerPeer limit = "watchers_per_topic_per_peer" // WithMaxWatchersPerPeer
	limitSelectorBytes           limit = "selector_bytes"              // MaxSelectorValueBytes
)

// allLimits are every limit, so that each one's counter is exported from
// the start (at 0): an alert on its rate then sees the first refusal.
var allLimits = []limit{limitRate, limitInFlightPerPeer, limitInFlightPerSession, limitSessions,
	limitSessionsPerPeer, limitWatchersPerSession, limitWatchersPerPeer, limitWatchersPerTopic, limitWatchersPerTopicPerPeer, limitSelectorBytes,
	limitWatchQueuedBytes, limitWatchQueuedKeys, limitTopicKeys, limitTopicBytes,
	limitTopicKeysPerWriter, limitTopicBytesPerWriter, limitConns, limitConnsPerSource, limitConnsPerPeer, limitBodiesPerPeer, limitBatchItems, limitMultiCalls,
	limitBodyBytes, limitBodyReadTimeout, limitHelloBytes, limitNameBytes, limitOffers}

// overLimit is the error of an entry refused for going over l, counted in
// m (which may be nil). Every limit refusal is made here, so none goes
// uncounted, and each names its limit in its details ({"limit":
// "watchers_per_peer"}, the value of lockstep_limit_refusals_total's
// label), for a program to read where the message says it in prose.
func overLimit(m *Metrics, l limit, code Code, format string, args ...any) *Error {
	m.limitRefused(l)
	return Errorf(code, format, args...).WithDetails(map[string]string{"limit": string(l)})
}

// defaultMaxConns is Limits.MaxConns where the file-descriptor limit
// allows it: ten connections for each of 10,000 node agents (a node
// agent's calls, heartbeats and watches share a few), and one for each
// session of a full server (ServerConfig.MaxSessions).
const defaultMaxConns = 100000

// peerLimitsCap bounds how many peers' records a server keeps: records of
// peers holding nothing (no session, watcher or call) are dropped beyond
// it, so peers that come and go cannot grow the table without bound.
const peerLimitsCap = 1 << 16

func (l *Limits) validate(maxSessions int) error {
	if l.SessionsPerPeer <= 0 {
		l.SessionsPerPeer = max(1, maxSessions/4)
	}
	if l.SessionsPerPeer >= maxSessions && maxSessions > 1 {
		return fmt.Errorf("Limits.SessionsPerPeer (%d) must be below MaxSessions (%d), so that no peer can take them all", l.SessionsPerPeer, maxSessions)
	}
	if l.WatchersPerSession <= 0 {
		l.WatchersPerSession = 256
	}
	if l.WatchersPerPeer <= 0 {
		l.WatchersPerPeer = 4096
	}
	if l.InFlightPerPeer <= 0 {
		l.InFlightPerPeer = 8192
	}
	if l.BodiesPerPeer <= 0 {
		l.BodiesPerPeer = 1024
	}
	if l.RequestsPerSecond <= 0 {
		l.RequestsPerSecond = 100000
	}
	if l.Burst <= 0 {
		l.Burst = 20000
	}
	if l.BatchItems <= 0 {
		l.BatchItems = 1000
	}
	if l.BodyReadTimeout <= 0 {
		l.BodyReadTimeout = 10 * time.Second
	}
	if l.WatchQueuedBytes <= 0 {
		l.WatchQueuedBytes = 4 << 20
	}
	if l.MaxConns <= 0 {
		l.MaxConns = defaultMaxConns
		if n := conns.OpenFileLimit(); n > 0 {
			l.MaxConns = min(l.MaxConns, max(1, n/4*3))
		}
	}
	if l.ConnsPerSource <= 0 {
		l.ConnsPerSource = max(1, l.MaxConns/2)
	}
	l.ConnsPerSource = min(l.ConnsPerSource, l.MaxConns)
	if l.ConnsPerPeer <= 0 {
		l.ConnsPerPeer = max(1, l.MaxConns/4)
	}
	l.ConnsPerPeer = min(l.ConnsPerPeer, l.MaxConns)
	if l.WatchersPerSession > l.WatchersPerPeer {
		return errors.New("Limits.WatchersPerSession must not exceed WatchersPerPeer")
	}
	return nil
}

// peerKey names a peer for its limits: its identity under mutual TLS, else
// its claimed component at its remote IP address.
func limitsKey(p *Peer, r *http.Request) string {
	if p.Authenticated {
		return p.Identity.String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return p.Identity.Component + "@" + host
}

// peerLimits keeps the per-peer counts of a server. Lock order: the
// server's session table before peerLimits.mu; peerLimits.mu is never held
// while calling out.
type peerLimits struct {
	cfg      Limits
	sessions sharedBound // ServerConfig.MaxSessions and Limits.SessionsPerPeer
	metrics  *Metrics    // counts refusals; nil without metrics

	mu    sync.Mutex
	peers map[string]*peerUsage
}

// peerUsage is what one peer holds now.
type peerUsage struct {
	key      string // the peer's limitsKey
	sessions int    // guarded by peerLimits.mu
	watchers int    // guarded by peerLimits.mu
	inFlight atomic.Int64
	// reading counts the bodies of its hellos, heartbeats and session
	// closes being read (Server.beginPeerBody).
	reading atomic.Int64
	limiter *rate.Limiter
}

func newPeerLimits(cfg Limits, maxSessions int, m *Metrics) *peerLimits {
	return &peerLimits{cfg: cfg, metrics: m, peers: map[string]*peerUsage{},
		sessions: sharedBound{max: int64(maxSessions), perPeer: int64(cfg.SessionsPerPeer)}}
}

// usage returns the record of key, creating it.
func (pl *peerLimits) usage(key string) *peerUsage {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	u := pl.peers[key]
	if u == nil {
		if len(pl.peers) >= peerLimitsCap {
			pl.evictIdleLocked()
		}
		u = &peerUsage{key: key, limiter: rate.NewLimiter(rate.Limit(pl.cfg.RequestsPerSecond), pl.cfg.Burst)}
		pl.peers[key] = u
	}
	return u
}

// evictIdleLocked drops the records of peers that hold nothing.
func (pl *peerLimits) evictIdleLocked() {
	for k, u := range pl.peers {
		if u.sessions == 0 && u.watchers == 0 && u.inFlight.Load() == 0 && u.reading.Load() == 0 {
			delete(pl.peers, k)
		}
	}
}

// allow takes one request from the peer's rate.
func (pl *peerLimits) allow(u *peerUsage) error {
	if !u.limiter.Allow() {
		return overLimit(pl.metrics, limitRate, CodeResourceExhausted, "request rate over %g per second for this peer", pl.cfg.RequestsPerSecond)
	}
	return nil
}

// beginCall counts a call in flight; the returned function ends it.
func (pl *peerLimits) beginCall(u *peerUsage, n int64) (func(), error) {
	end, held := pl.tryBeginCall(u, n)
	if end == nil {
		return nil, overLimit(pl.metrics, limitInFlightPerPeer, CodeResourceExhausted, "this peer has %d calls in flight, the limit is %d", held, pl.cfg.InFlightPerPeer)
	}
	return end, nil
}

// tryBeginCall is beginCall without counting a refusal, for what is not
// refused when over the limit (a held handshake refusal is answered at
// once instead); end is nil over the limit, and held is what the peer had
// in flight.
func (pl *peerLimits) tryBeginCall(u *peerUsage, n int64) (end func(), held int64) {
	if v := u.inFlight.Add(n); v > int64(pl.cfg.InFlightPerPeer) {
		u.inFlight.Add(-n)
		return nil, v - n
	}
	return func() { u.inFlight.Add(-n) }, 0
}

// addSession counts a new session of the peer, which grows the server's
// total sessions by grow (0 when it replaces another peer's session of
// the same instance), refusing it beyond MaxSessions, the peer's share,
// or the reserve (share.go). total is the server's sessions now; the
// session table's lock is held.
func (pl *peerLimits) addSession(u *peerUsage, total, grow int) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if err := pl.checkSessionLocked(u, total, grow, pl.metrics); err != nil {
		return err
	}
	u.sessions++
	return nil
}

// checkSession is addSession's answer without counting the session or
// its refusal, for a dry run.
func (pl *peerLimits) checkSession(u *peerUsage, total, grow int) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.checkSessionLocked(u, total, grow, nil)
}

// checkSessionLocked refuses a new session as addSession says, counting
// the refusal in m (nil: uncounted).
func (pl *peerLimits) checkSessionLocked(u *peerUsage, total, grow int, m *Metrics) error {
	b := pl.sessions
	switch b.admit(int64(total), int64(u.sessions), 1, int64(grow)) {
	case shareOverPeer:
		return overLimit(m, limitSessionsPerPeer, CodeResourceExhausted, "this peer holds its limit of %d sessions", b.perPeer)
	case shareOverBound:
		return overLimit(m, limitSessions, CodeResourceExhausted, "the server holds its limit of %d sessions", b.max)
	case shareReserved:
		return overLimit(m, limitSessions, CodeResourceExhausted,
			"the server holds %d of its %d sessions; the rest are kept for peers holding at most %d", total, b.max, b.little())
	}
	return nil
}

func (pl *peerLimits) removeSession(u *peerUsage) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	u.sessions--
}

// addWatcher counts a new watch stream of the peer and session.
func (pl *peerLimits) addWatcher(u *peerUsage, sess *session) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if sess.watchers >= pl.cfg.WatchersPerSession {
		return overLimit(pl.metrics, limitWatchersPerSession, CodeResourceExhausted, "this session holds its limit of %d watchers", pl.cfg.WatchersPerSession)
	}
	if u.watchers >= pl.cfg.WatchersPerPeer {
		return overLimit(pl.metrics, limitWatchersPerPeer, CodeResourceExhausted, "this peer holds its limit of %d watchers", pl.cfg.WatchersPerPeer)
	}
	sess.watchers++
	u.watchers++
	return nil
}

func (pl *peerLimits) removeWatcher(u *peerUsage, sess *session) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	sess.watchers--
	u.watchers--
}
