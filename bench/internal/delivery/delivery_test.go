package delivery

import (
	"testing"
	"time"
)

func TestKeyIndex(t *testing.T) {
	for key, want := range map[string]int{"node-0042": 42, "/nodes/node-0007": 7, "node-0100": 100, "node-": -1, "node-4x": -1} {
		if got := KeyIndex(key); got != want {
			t.Errorf("KeyIndex(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestFanWatcherConvergesOnEveryKeysFinalID(t *testing.T) {
	w := NewWatcher(100)
	final := make([]int64, 100)
	final[3], final[7] = 30, 70
	w.Got(3, 30, 0, false, true)
	if w.Converged(final) {
		t.Fatal("converged without key 7's final write")
	}
	w.Got(7, 71, time.Millisecond, true, true)
	w.Got(7, 50, 0, false, true) // an older id never moves a key back
	if !w.Converged(final) {
		t.Fatal("not converged after every key's final write")
	}
	if w.delivered != 3 || len(w.lat) != 1 || len(w.pending) != 2 {
		t.Fatalf("recorded %d deliveries, %d timed, %d pending; want 3, 1, 2", w.delivered, len(w.lat), len(w.pending))
	}
	w.Reset()
	w.Got(1, 5, 0, false, false) // not recording: only the state moves
	if w.delivered != 0 || w.last[1] != 5 {
		t.Fatalf("after reset, a delivery outside recording counted %d, key state %d", w.delivered, w.last[1])
	}
}
