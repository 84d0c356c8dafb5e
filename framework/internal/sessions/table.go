// Package sessions is a server's table of live sessions: one per
// (contract, client instance), found by its token, replaced by the same
// instance's re-handshake from the same owner, refused to another owner,
// and counted in every peer's limits as sessions come and go; and the
// session clock (Expiry) that closes the sessions that lapsed.
//
// It is separate because the table has one job and its own lock, which
// the server's handshake, admission, heartbeats, drain and expiry loop all
// reach through a few calls; the session record itself stays with the
// server, which reads and renews it on every request. The table imports
// the limits it counts in, never the framework.
package sessions

import (
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
)

// Key names the session of one client instance of a contract.
type Key struct{ Contract, Instance string }

// Record is what the table reads of a session it holds: O is the type
// of its owner, the peer that made it.
type Record[O any] interface {
	comparable
	// Token is the session's opaque name, sent on every call.
	Token() string
	// Key is the client instance and contract the session is of.
	Key() Key
	// Owner is the peer that made the session.
	Owner() O
	// Usage is its peer's record of limits.
	Usage() *limits.Usage
	// LastSeen is when a call or heartbeat last renewed the session, in
	// nanoseconds on the server's monotonic clock.
	LastSeen() int64
}

// Table holds the live sessions of a server. Lock order: its lock before
// the limits' lock.
type Table[S Record[O], O any] struct {
	mu       sync.RWMutex
	byToken  map[string]S
	byClient map[Key]S
	limits   *limits.Peers
	// sameOwner reports whether claimed may use, or replace, a session
	// held made by held (docs/security.md).
	sameOwner func(held, claimed O) bool
}

// New returns an empty table counting its sessions in l; sameOwner says
// who may replace a session an instance holds.
func New[S Record[O], O any](l *limits.Peers, sameOwner func(held, claimed O) bool) *Table[S, O] {
	return &Table[S, O]{byToken: map[string]S{}, byClient: map[Key]S{}, limits: l, sameOwner: sameOwner}
}

// Get returns the session named token, or the zero S.
func (t *Table[S, O]) Get(token string) S {
	t.mu.RLock()
	s := t.byToken[token]
	t.mu.RUnlock()
	return s
}

// Of returns the session a client instance holds of a contract, or the
// zero S.
func (t *Table[S, O]) Of(k Key) S {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byClient[k]
}

// Put stores s, returning the session it replaced, if any. It refuses, in
// one step with the storing so that concurrent handshakes cannot slip
// past: an instance whose session belongs to another peer
// (permission_denied: no takeover, the holder keeps its session), and a new
// session beyond the server's bound, the peer's share, or the sessions
// kept for peers holding few (resource_exhausted; see
// [limits.Peers.AddSession]). A session that replaces one of its own peer
// counts for nothing new.
func (t *Table[S, O]) Put(s S) (replaced S, err error) {
	var none S
	k := s.Key()
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.byClient[k]
	if old != none && !t.sameOwner(old.Owner(), s.Owner()) {
		return none, taken(k)
	}
	if old == none || old.Usage() != s.Usage() {
		if err := t.limits.AddSession(s.Usage(), len(t.byToken), t.growth(old)); err != nil {
			return none, err
		}
	}
	if old != none {
		delete(t.byToken, old.Token())
		if old.Usage() != s.Usage() {
			t.limits.RemoveSession(old.Usage())
		}
		replaced = old
	}
	t.byClient[k] = s
	t.byToken[s.Token()] = s
	return replaced, nil
}

// taken is the refusal of a session for an instance another identity's
// session holds.
func taken(k Key) error {
	return apierror.Errorf(apierror.CodePermissionDenied, "instance %q of %s holds a session of another identity", k.Instance, k.Contract)
}

// growth is how much a new session grows the table: nothing when it
// replaces old.
func (t *Table[S, O]) growth(old S) int {
	var none S
	if old != none {
		return 0
	}
	return 1
}

// Check answers what Put would for a new session of u for k, owned by
// owner, without storing anything: for a dry run.
func (t *Table[S, O]) Check(u *limits.Usage, owner O, k Key) error {
	var none S
	t.mu.RLock()
	defer t.mu.RUnlock()
	old := t.byClient[k]
	if old != none && !t.sameOwner(old.Owner(), owner) {
		return taken(k)
	}
	if old != none && old.Usage() == u {
		return nil
	}
	return t.limits.CheckSession(u, len(t.byToken), t.growth(old))
}

// CheckNew answers whether a session of a new peer, one holding none,
// would be admitted now (the server's bound and the share it keeps for
// small peers), without storing anything: for a dry run asked on behalf
// of a client component.
func (t *Table[S, O]) CheckNew() error {
	var none S
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.limits.CheckSession(&limits.Usage{}, len(t.byToken), t.growth(none))
}

// Remove deletes s if it is still current, reporting whether it was.
func (t *Table[S, O]) Remove(s S) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byToken[s.Token()] != s {
		return false
	}
	delete(t.byToken, s.Token())
	t.limits.RemoveSession(s.Usage())
	if t.byClient[s.Key()] == s {
		delete(t.byClient, s.Key())
	}
	return true
}

// Has reports whether a client instance holds a session of a contract.
func (t *Table[S, O]) Has(k Key) bool {
	var none S
	return t.Of(k) != none
}

// Len returns how many sessions are live.
func (t *Table[S, O]) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byToken)
}

// Snapshot returns every live session.
func (t *Table[S, O]) Snapshot() []S {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]S, 0, len(t.byToken))
	for _, s := range t.byToken {
		out = append(out, s)
	}
	return out
}

// Expired returns the sessions idle for longer than ttl at now.
func (t *Table[S, O]) Expired(now int64, ttl time.Duration) []S {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []S
	for _, s := range t.byToken {
		if time.Duration(now-s.LastSeen()) > ttl {
			out = append(out, s)
		}
	}
	return out
}

// CountFor returns how many live sessions a contract has.
func (t *Table[S, O]) CountFor(contract string) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for k := range t.byClient {
		if k.Contract == contract {
			n++
		}
	}
	return n
}
