package framework

import (
	"sync/atomic"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/internal/admit"
	"github.com/lockstep-dev/lockstep/framework/internal/sessions"
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

// What the session table reads of a session (sessions.Record).
func (s *session) Token() string     { return s.token }
func (s *session) Key() sessions.Key { return sessionKey(s.contract, s.peer.Instance) }
func (s *session) Owner() *Peer      { return s.owner }
func (s *session) Usage() *peerUsage { return s.usage }
func (s *session) LastSeen() int64   { return s.lastSeen.Load() }

// newSessionTable returns an empty table counting sessions in l; only a
// session's owner may replace it (admit.SameOwner).
func newSessionTable(l *peerLimits) *sessionTable { return sessions.New[*session](l, admit.SameOwner) }

// clientKey names one client instance of a contract.
type clientKey struct{ contract, instance string }

// sessionKey names the session of instance of contract in the table.
func sessionKey(contract, instance string) sessions.Key {
	return sessions.Key{Contract: contract, Instance: instance}
}

// sessionTable holds the live sessions of a server (package sessions): a
// re-handshake by the same client instance, from the same peer, replaces
// its earlier session; every peer's sessions are counted in its limits.
type sessionTable = sessions.Table[*session, *Peer]
