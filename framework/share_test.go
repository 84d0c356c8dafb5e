package framework

import "testing"

func TestSharedBound(t *testing.T) {
	b := sharedBound{max: 100, perPeer: 25} // the reserve is the last 25, for peers holding at most 1
	tests := []struct {
		name                   string
		total, held, add, grow int64 // what all peers hold, what this one holds, what it asks for, how much the total grows
		want                   shareVerdict
	}{
		{"room", 10, 0, 1, 1, shareAdmitted},
		{"up to its share", 10, 24, 1, 1, shareAdmitted},
		{"beyond its share", 10, 25, 1, 1, shareOverPeer},
		{"up to the reserve", 74, 10, 1, 1, shareAdmitted},
		{"into the reserve, holding much", 75, 10, 1, 1, shareReserved},
		{"into the reserve, holding nothing", 75, 0, 1, 1, shareAdmitted},
		{"the last unit, holding nothing", 99, 0, 1, 1, shareAdmitted},
		{"beyond the bound", 100, 0, 1, 1, shareOverBound},
		{"what does not grow the total, when full", 100, 20, 0, 0, shareAdmitted},
		{"taking over what another held, when full", 100, 20, 1, 0, shareAdmitted},
		{"taking over beyond its share", 50, 25, 1, 0, shareOverPeer},
		{"giving back, over everything", 120, 30, -5, -5, shareAdmitted},
	}
	for _, tt := range tests {
		if got := b.admit(tt.total, tt.held, tt.add, tt.grow); got != tt.want {
			t.Errorf("%s: admit(%d, %d, %d, %d) = %d, want %d", tt.name, tt.total, tt.held, tt.add, tt.grow, got, tt.want)
		}
	}
	// A share of the whole bound leaves no reserve: one peer may fill it.
	whole := sharedBound{max: 100, perPeer: 100}
	if got := whole.admit(99, 99, 1, 1); got != shareAdmitted {
		t.Errorf("a share of the whole bound: %d", got)
	}
	// A share beyond three quarters leaves what it does not take.
	if r := (sharedBound{max: 100, perPeer: 90}).reserve(); r != 10 {
		t.Errorf("reserve with a share of 90 of 100: %d", r)
	}
}

// The share a peer holding little may take from the reserve is real at
// every scale: 1/4096 of a large bound, a quarter of the reserve up to a
// floor at a small one, never one unit where the reserve holds more.
func TestSharedBoundLittleIsRealAtSmallBounds(t *testing.T) {
	tests := []struct {
		name string
		b    sharedBound
		want int64
	}{
		{"the default sessions", sharedBound{max: 100_000, perPeer: 25_000}, 24},
		{"connections at a descriptor limit of 256", sharedBound{max: 192, perPeer: 96}, 12},
		{"connections at a descriptor limit of 20,000", sharedBound{max: 15_000, perPeer: 7_500}, 16},
		{"the default watchers of a topic", sharedBound{max: 10_000, perPeer: 2_500}, 16},
		{"a tiny bound", sharedBound{max: 4, perPeer: 1}, 1},
		{"the default topic bytes", sharedBound{max: 256 << 20, perPeer: 64 << 20, floor: bytesFloor}, 64 << 10},
		{"a 1 MiB topic", sharedBound{max: 1 << 20, perPeer: 256 << 10, floor: bytesFloor}, 64 << 10},
	}
	for _, tt := range tests {
		if got := tt.b.little(); got != tt.want {
			t.Errorf("%s: little() = %d, want %d", tt.name, got, tt.want)
		}
	}
}
