package framework

import (
	"sync"
	"time"
)

// blockedCalls tracks the calls of a client that wait for a compatible
// peer, so its status says how many wait and for how long. A call enters
// once, when it first has to wait, and leaves when it stops waiting for
// good (sent, failed or given up).
type blockedCalls struct {
	mu    sync.Mutex
	next  uint64
	since map[uint64]time.Time
}

// enter records a call that began waiting at now and returns its ticket.
func (b *blockedCalls) enter(now time.Time) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since == nil {
		b.since = map[uint64]time.Time{}
	}
	b.next++
	b.since[b.next] = now
	return b.next
}

// leave forgets a ticket from enter.
func (b *blockedCalls) leave(ticket uint64) {
	b.mu.Lock()
	delete(b.since, ticket)
	b.mu.Unlock()
}

// snapshot returns how many calls wait at now and the longest wait.
func (b *blockedCalls) snapshot(now time.Time) (n int, longest time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.since {
		longest = max(longest, now.Sub(t))
	}
	return len(b.since), longest
}
