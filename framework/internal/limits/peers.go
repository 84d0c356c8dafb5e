package limits

import (
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/share"
)

// peersCap bounds how many peers' records a server keeps: records of
// peers holding nothing (no session, watcher or call) are dropped beyond
// it, so peers that come and go cannot grow the table without bound.
const peersCap = 1 << 16

// Peers keeps the per-peer counts of a server. A peer is its key: its
// identity under mutual TLS, else its claimed component at its remote IP
// address. Lock order: the server's session table before Peers.mu;
// Peers.mu is never held while calling out.
type Peers struct {
	cfg      Config
	sessions share.Bound // ServerConfig.MaxSessions and Limits.SessionsPerPeer
	count    Counter     // counts refusals

	mu    sync.Mutex
	peers map[string]*Usage
}

// Usage is what one peer holds now.
type Usage struct {
	Key      string // the peer's key
	sessions int    // guarded by Peers.mu
	watchers int    // guarded by Peers.mu
	inFlight atomic.Int64
	// reading counts the bodies of its entries being read (BeginBody).
	reading atomic.Int64
	limiter *rate.Limiter
}

// NewPeers returns the per-peer counts of a server of maxSessions
// sessions, with cfg's defaults filled, counting refusals with count.
func NewPeers(cfg Config, maxSessions int, count Counter) *Peers {
	return &Peers{cfg: cfg, count: count, peers: map[string]*Usage{},
		sessions: share.Bound{Max: int64(maxSessions), PerPeer: int64(cfg.SessionsPerPeer)}}
}

// Usage returns the record of key, creating it.
func (pl *Peers) Usage(key string) *Usage {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	u := pl.peers[key]
	if u == nil {
		if len(pl.peers) >= peersCap {
			pl.evictIdleLocked()
		}
		u = &Usage{Key: key, limiter: rate.NewLimiter(rate.Limit(pl.cfg.RequestsPerSecond), pl.cfg.Burst)}
		pl.peers[key] = u
	}
	return u
}

// evictIdleLocked drops the records of peers that hold nothing.
func (pl *Peers) evictIdleLocked() {
	for k, u := range pl.peers {
		if u.sessions == 0 && u.watchers == 0 && u.inFlight.Load() == 0 && u.reading.Load() == 0 {
			delete(pl.peers, k)
		}
	}
}

// Allow takes one request from the peer's rate.
func (pl *Peers) Allow(u *Usage) error {
	if !u.limiter.Allow() {
		return Refuse(pl.count, Rate, apierror.CodeResourceExhausted, "request rate over %g per second for this peer", pl.cfg.RequestsPerSecond)
	}
	return nil
}

// BeginCall counts n calls in flight; the returned function ends them.
func (pl *Peers) BeginCall(u *Usage, n int64) (func(), error) {
	end, held := pl.TryBeginCall(u, n)
	if end == nil {
		return nil, Refuse(pl.count, InFlightPerPeer, apierror.CodeResourceExhausted, "this peer has %d calls in flight, the limit is %d", held, pl.cfg.InFlightPerPeer)
	}
	return end, nil
}

// TryBeginCall is BeginCall without counting a refusal, for what is not
// refused when over the limit (a held handshake refusal is answered at
// once instead); end is nil over the limit, and held is what the peer had
// in flight.
func (pl *Peers) TryBeginCall(u *Usage, n int64) (end func(), held int64) {
	if v := u.inFlight.Add(n); v > int64(pl.cfg.InFlightPerPeer) {
		u.inFlight.Add(-n)
		return nil, v - n
	}
	return func() { u.inFlight.Add(-n) }, 0
}

// BeginBody counts one of the peer's request bodies on its way, bounded
// by Limits.BodiesPerPeer over all the peer's connections and streams;
// the returned function ends it. Beyond the bound the entry is refused
// resource_exhausted before its body is read.
func (pl *Peers) BeginBody(u *Usage) (func(), error) {
	limit := int64(pl.cfg.BodiesPerPeer)
	if n := u.reading.Add(1); n > limit {
		u.reading.Add(-1)
		return nil, Refuse(pl.count, BodiesPerPeer, apierror.CodeResourceExhausted,
			"this peer has %d requests whose bodies are on their way, the limit is %d", n-1, limit)
	}
	return func() { u.reading.Add(-1) }, nil
}

// AddSession counts a new session of the peer, which grows the server's
// total sessions by grow (0 when it replaces another peer's session of
// the same instance), refusing it beyond MaxSessions, the peer's share,
// or the reserve (package share). total is the server's sessions now; the
// session table's lock is held.
func (pl *Peers) AddSession(u *Usage, total, grow int) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if err := pl.checkSessionLocked(u, total, grow, pl.count); err != nil {
		return err
	}
	u.sessions++
	return nil
}

// CheckSession is AddSession's answer without counting the session or
// its refusal, for a dry run.
func (pl *Peers) CheckSession(u *Usage, total, grow int) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.checkSessionLocked(u, total, grow, nil)
}

// checkSessionLocked refuses a new session as AddSession says, counting
// the refusal with count (nil: uncounted).
func (pl *Peers) checkSessionLocked(u *Usage, total, grow int, count Counter) error {
	b := pl.sessions
	switch b.Admit(int64(total), int64(u.sessions), 1, int64(grow)) {
	case share.OverPeer:
		return Refuse(count, SessionsPerPeer, apierror.CodeResourceExhausted, "this peer holds its limit of %d sessions", b.PerPeer)
	case share.OverBound:
		return Refuse(count, Sessions, apierror.CodeResourceExhausted, "the server holds its limit of %d sessions", b.Max)
	case share.Reserved:
		return Refuse(count, Sessions, apierror.CodeResourceExhausted,
			"the server holds %d of its %d sessions; the rest are kept for peers holding at most %d", total, b.Max, b.Little())
	}
	return nil
}

// RemoveSession gives back one session of the peer.
func (pl *Peers) RemoveSession(u *Usage) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	u.sessions--
}

// AddWatcher counts a new watch stream of the peer and of its session,
// whose count of watchers is sessionWatchers (guarded by Peers.mu).
func (pl *Peers) AddWatcher(u *Usage, sessionWatchers *int) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if *sessionWatchers >= pl.cfg.WatchersPerSession {
		return Refuse(pl.count, WatchersPerSession, apierror.CodeResourceExhausted, "this session holds its limit of %d watchers", pl.cfg.WatchersPerSession)
	}
	if u.watchers >= pl.cfg.WatchersPerPeer {
		return Refuse(pl.count, WatchersPerPeer, apierror.CodeResourceExhausted, "this peer holds its limit of %d watchers", pl.cfg.WatchersPerPeer)
	}
	*sessionWatchers++
	u.watchers++
	return nil
}

// RemoveWatcher undoes AddWatcher.
func (pl *Peers) RemoveWatcher(u *Usage, sessionWatchers *int) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	*sessionWatchers--
	u.watchers--
}
