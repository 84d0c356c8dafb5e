// Package delivery records what each watcher of a fan-out benchmark
// received: the latencies it could time itself, the receipts to time once
// the writer's clock is known, and the newest write of each key it holds,
// so a round can tell when every watcher has converged on the final state.
package delivery

import (
	"strings"
	"sync"
	"time"
)

// Watcher is one watcher's record of a round: when it received what, and
// the newest write it holds of each key.
type Watcher struct {
	mu sync.Mutex
	// lat are delivery latencies known at receipt (the stamp was decoded).
	lat []time.Duration
	// pending are receipts to resolve after the round: the write's id
	// (etcd revision or gRPC sequence) and when it arrived.
	pending [][2]int64
	// last is the newest id (or stamp) seen per key, for convergence.
	last      []int64
	delivered int64
}

// NewWatcher returns a watcher of keys keys.
func NewWatcher(keys int) *Watcher { return &Watcher{last: make([]int64, keys)} }

// Reset forgets the round's deliveries, not the keys' state.
func (w *Watcher) Reset() {
	w.mu.Lock()
	w.lat, w.pending, w.delivered = w.lat[:0], w.pending[:0], 0
	w.mu.Unlock()
}

// Got records a delivery of key with id (the write's stamp, revision or
// sequence, rising); lat is its latency when known (known), otherwise the
// receipt is kept for [Watcher.Pending]. Outside recording only the key's
// state moves.
func (w *Watcher) Got(key int, id int64, lat time.Duration, known bool, recording bool) {
	now := time.Now().UnixNano()
	w.mu.Lock()
	defer w.mu.Unlock()
	if key >= 0 && key < len(w.last) && id > w.last[key] {
		w.last[key] = id
	}
	if !recording {
		return
	}
	w.delivered++
	if known {
		w.lat = append(w.lat, lat)
	} else {
		w.pending = append(w.pending, [2]int64{id, now})
	}
}

// Converged reports whether the watcher holds every key's final id.
func (w *Watcher) Converged(final []int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, f := range final {
		if w.last[k] < f {
			return false
		}
	}
	return true
}

// KeyIndex maps "node-0042" (and "/nodes/node-0042") to 42, or -1. It
// runs for every delivery of every system, so it parses by hand.
func KeyIndex(key string) int {
	digits := key[strings.LastIndexByte(key, '-')+1:]
	if digits == "" {
		return -1
	}
	k := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return -1
		}
		k = 10*k + int(c-'0')
	}
	return k
}

// Totals returns the round's timed latencies, pending receipts (write id,
// arrival in Unix nanoseconds) and delivery count.
func (w *Watcher) Totals() (lat []time.Duration, pending [][2]int64, delivered int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.lat...), append([][2]int64(nil), w.pending...), w.delivered
}

// SetHeld raises the watcher's state of key to id (writes made before the
// watch began, which it holds without a delivery).
func (w *Watcher) SetHeld(key int, id int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if key >= 0 && key < len(w.last) {
		w.last[key] = max(w.last[key], id)
	}
}
