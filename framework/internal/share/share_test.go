package share

import "testing"

func TestSharedBound(t *testing.T) {
	b := Bound{Max: 100, PerPeer: 25} // the reserve is the last 25, for peers holding at most 1
	tests := []struct {
		name                   string
		total, held, add, grow int64 // what all peers hold, what this one holds, what it asks for, how much the total grows
		want                   Verdict
	}{
		{"room", 10, 0, 1, 1, Admitted},
		{"up to its share", 10, 24, 1, 1, Admitted},
		{"beyond its share", 10, 25, 1, 1, OverPeer},
		{"up to the reserve", 74, 10, 1, 1, Admitted},
		{"into the reserve, holding much", 75, 10, 1, 1, Reserved},
		{"into the reserve, holding nothing", 75, 0, 1, 1, Admitted},
		{"the last unit, holding nothing", 99, 0, 1, 1, Admitted},
		{"beyond the bound", 100, 0, 1, 1, OverBound},
		{"what does not grow the total, when full", 100, 20, 0, 0, Admitted},
		{"taking over what another held, when full", 100, 20, 1, 0, Admitted},
		{"taking over beyond its share", 50, 25, 1, 0, OverPeer},
		{"giving back, over everything", 120, 30, -5, -5, Admitted},
	}
	for _, tt := range tests {
		if got := b.Admit(tt.total, tt.held, tt.add, tt.grow); got != tt.want {
			t.Errorf("%s: admit(%d, %d, %d, %d) = %d, want %d", tt.name, tt.total, tt.held, tt.add, tt.grow, got, tt.want)
		}
	}
	// A share of the whole bound leaves no reserve: one peer may fill it.
	whole := Bound{Max: 100, PerPeer: 100}
	if got := whole.Admit(99, 99, 1, 1); got != Admitted {
		t.Errorf("a share of the whole bound: %d", got)
	}
	// A share beyond three quarters leaves what it does not take.
	if r := (Bound{Max: 100, PerPeer: 90}).Reserve(); r != 10 {
		t.Errorf("reserve with a share of 90 of 100: %d", r)
	}
}

// The share a peer holding little may take from the reserve is real at
// every scale: 1/4096 of a large bound, a quarter of the reserve up to a
// floor at a small one, never one unit where the reserve holds more.
func TestSharedBoundLittleIsRealAtSmallBounds(t *testing.T) {
	tests := []struct {
		name string
		b    Bound
		want int64
	}{
		{"the default sessions", Bound{Max: 100_000, PerPeer: 25_000}, 24},
		{"connections at a descriptor limit of 256", Bound{Max: 192, PerPeer: 96}, 12},
		{"connections at a descriptor limit of 20,000", Bound{Max: 15_000, PerPeer: 7_500}, 16},
		{"the default watchers of a topic", Bound{Max: 10_000, PerPeer: 2_500}, 16},
		{"a tiny bound", Bound{Max: 4, PerPeer: 1}, 1},
		{"the default topic bytes", Bound{Max: 256 << 20, PerPeer: 64 << 20, Floor: BytesFloor}, 64 << 10},
		{"a 1 MiB topic", Bound{Max: 1 << 20, PerPeer: 256 << 10, Floor: BytesFloor}, 64 << 10},
	}
	for _, tt := range tests {
		if got := tt.b.Little(); got != tt.want {
			t.Errorf("%s: little() = %d, want %d", tt.name, got, tt.want)
		}
	}
}
