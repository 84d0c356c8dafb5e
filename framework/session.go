package framework

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

// session is the server's record of one (contract, client instance)
// agreement. lastSeen is nanoseconds since the server started, on its
// monotonic clock: no clock of another machine is ever compared with it.
type session struct {
	token     string
	contract  string
	version   string
	peer      handshake.Peer
	createdAt int64
	lastSeen  atomic.Int64
	inFlight  atomic.Int64
	// drainNotified is set once an answer carrying the draining header has
	// reached this session.
	drainNotified atomic.Bool
	resync        atomic.Bool
	// owner is the peer that made the session; only the same peer may use
	// it, or re-handshake its instance (docs/security.md).
	owner *Peer
	// usage is its peer's record of limits; watchers counts its watch
	// streams, guarded by peerLimits.mu.
	usage    *peerUsage
	watchers int
}

type clientKey struct{ contract, instance string }

// sessionTable holds the live sessions of a server. A re-handshake by the
// same client instance, from the same peer, replaces its earlier session.
// It counts every peer's sessions in limits as sessions come and go. Lock
// order: mu before limits.mu.
type sessionTable struct {
	mu       sync.RWMutex
	byToken  map[string]*session
	byClient map[clientKey]*session
	limits   *peerLimits
}

func newSessionTable(limits *peerLimits) *sessionTable {
	return &sessionTable{byToken: map[string]*session{}, byClient: map[clientKey]*session{}, limits: limits}
}

func (t *sessionTable) get(token string) *session {
	t.mu.RLock()
	s := t.byToken[token]
	t.mu.RUnlock()
	return s
}

// put stores s, returning the session it replaced, if any. It refuses, in
// one step with the storing so that concurrent handshakes cannot slip
// past: an instance whose session belongs to another peer
// (permission_denied: no takeover, the holder keeps its session), and a new
// session beyond MaxSessions, the peer's Limits.SessionsPerPeer, or the
// sessions kept for peers holding few (resource_exhausted; see
// [peerLimits.addSession]). A session that replaces one of its own peer
// counts for nothing new.
func (t *sessionTable) put(s *session) (replaced *session, err error) {
	k := clientKey{s.contract, s.peer.Instance}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.byClient[k]
	if old != nil && !sameOwner(old.owner, s.owner) {
		return nil, Errorf(CodePermissionDenied, "instance %q of %s holds a session of another identity", s.peer.Instance, s.contract)
	}
	if old == nil || old.usage != s.usage {
		if err := t.limits.AddSession(s.usage, len(t.byToken), t.growth(old)); err != nil {
			return nil, err
		}
	}
	if old != nil {
		delete(t.byToken, old.token)
		if old.usage != s.usage {
			t.limits.RemoveSession(old.usage)
		}
		replaced = old
	}
	t.byClient[k] = s
	t.byToken[s.token] = s
	return replaced, nil
}

// growth is how much a new session grows the table: nothing when it
// replaces old.
func (t *sessionTable) growth(old *session) int {
	if old != nil {
		return 0
	}
	return 1
}

// check answers what put would for a new session of u as instance of
// contract, owned by owner, without storing anything: for a dry run.
func (t *sessionTable) check(u *peerUsage, owner *Peer, contract, instance string) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	old := t.byClient[clientKey{contract, instance}]
	if old != nil && !sameOwner(old.owner, owner) {
		return Errorf(CodePermissionDenied, "instance %q of %s holds a session of another identity", instance, contract)
	}
	if old != nil && old.usage == u {
		return nil
	}
	return t.limits.CheckSession(u, len(t.byToken), t.growth(old))
}

// checkNew answers whether a session of a new peer, one holding none,
// would be admitted now (the server's bound and the share it keeps for
// small peers), without storing anything: for a dry run asked on behalf
// of a client component.
func (t *sessionTable) checkNew() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.limits.CheckSession(&peerUsage{}, len(t.byToken), t.growth(nil))
}

// remove deletes s if it is still current, reporting whether it was.
func (t *sessionTable) remove(s *session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byToken[s.token] != s {
		return false
	}
	delete(t.byToken, s.token)
	t.limits.RemoveSession(s.usage)
	if t.byClient[clientKey{s.contract, s.peer.Instance}] == s {
		delete(t.byClient, clientKey{s.contract, s.peer.Instance})
	}
	return true
}

// has reports whether a client instance holds a session of a contract.
func (t *sessionTable) has(contract, instance string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byClient[clientKey{contract, instance}] != nil
}

func (t *sessionTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byToken)
}

// snapshot returns every live session.
func (t *sessionTable) snapshot() []*session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*session, 0, len(t.byToken))
	for _, s := range t.byToken {
		out = append(out, s)
	}
	return out
}

// expired returns the sessions idle for longer than ttl at now.
func (t *sessionTable) expired(now int64, ttl time.Duration) []*session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*session
	for _, s := range t.byToken {
		if time.Duration(now-s.lastSeen.Load()) > ttl {
			out = append(out, s)
		}
	}
	return out
}

// countFor returns how many live sessions a contract has.
func (t *sessionTable) countFor(contract string) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for k := range t.byClient {
		if k.contract == contract {
			n++
		}
	}
	return n
}
