package topics

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Host is what the topics of one server need from it, wired by the root
// package. Its values are fixed once the server is built.
type Host struct {
	// Component and Instance are the server's identity: a synced marker
	// names the instance, and a draining refusal the component.
	Component, Instance string
	// Clock runs the streams' ping timers.
	Clock clockwork.Clock
	// Now is the server's monotonic time in nanoseconds, which dates
	// tombstones.
	Now func() int64
	// Goroutines counts the fan-out and flush goroutines, so that the
	// server's stop waits for them.
	Goroutines *sync.WaitGroup
	// SessionTTL sets the ping interval (half of it): a watcher can tell
	// a quiet topic from a dead connection within a TTL.
	SessionTTL time.Duration
	// WriteTimeout bounds how long a watcher may take to accept a write.
	WriteTimeout time.Duration
	// WatchQueuedBytes bounds the bytes a watcher that does not read may
	// leave queued (Limits.WatchQueuedBytes; 0: no bound).
	WatchQueuedBytes int64
	// Refused counts a request refused for a limit (the server's
	// metrics); nil counts nothing.
	Refused limits.Counter
	// SessionLive reports whether the client instance of contract has a
	// session, so that a client's write that outlived its session's loss
	// is refused rather than stored without a writer to own it.
	SessionLive func(contract, instance string) bool
	// AddWatcher takes one of the server's watchers for sess (its
	// session's and its peer's limits), refusing when they are full;
	// RemoveWatcher gives it back.
	AddWatcher    func(sess Session) error
	RemoveWatcher func(sess Session)
}

// Session is the session a watch stream belongs to, as the server knows
// it.
type Session interface {
	// Peer is who holds the session.
	Peer() handshake.Peer
	// Contract is the name of the session's contract.
	Contract() string
	// ShareKey names the session's peer for the bounds peers share (its
	// certificate's identity under mutual TLS).
	ShareKey() string
	// NoticeDrain records that the session's client was told that the
	// server drains.
	NoticeDrain()
}

// refused counts a refusal for limit l, when the host counts them.
func (h *Host) refused(l limits.Name) {
	if h.Refused != nil {
		h.Refused(l)
	}
}

// overLimit is the error of a request refused for going over limit l,
// counted (limits.Refuse).
func (h *Host) overLimit(l limits.Name, code apierror.Code, format string, args ...any) *apierror.Error {
	return limits.Refuse(h.Refused, l, code, format, args...)
}

// ObjectVersion identifies one write of a topic object: its writer's
// epoch and sequence number (frames.ObjectVersion, as watchers read it).
type ObjectVersion = frames.ObjectVersion

// peerKey is a client instance of a contract: the watch streams a lost
// session leaves are closed by it.
type peerKey struct{ contract, instance string }

// randomID returns n random bytes in hex: writer epochs and topic
// histories.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
