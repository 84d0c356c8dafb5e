package probe

import (
	"math/rand/v2"
	"time"
)

// Backoff shapes the delays between reconnect attempts: gRPC's connection
// backoff (exponential, with jitter) with much smaller constants, because in
// lockstep an upgrade's downtime should stay close to the skew between the
// two sides, not to a backoff ceiling. Jitter keeps thousands of clients from
// arriving together.
type Backoff struct {
	// Base is the first delay; default 5ms.
	Base time.Duration
	// Max caps the delay; default 100ms. It bounds how late a client notices
	// a peer that came back at an address it was already trying.
	Max time.Duration
	// Multiplier grows the delay after each failure; default 1.6.
	Multiplier float64
	// Jitter randomises each delay by ±Jitter of itself; default 0.2,
	// negative for none.
	Jitter float64
}

// DefaultBackoff is the backoff clients use unless configured otherwise.
var DefaultBackoff = Backoff{Base: 5 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2}

// WithDefaults returns b with its zero fields given their defaults
// (DefaultBackoff's), Max raised to Base, and a negative Jitter as none.
func WithDefaults(b Backoff) Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoff.Base
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoff.Max
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	if b.Multiplier < 1 {
		b.Multiplier = DefaultBackoff.Multiplier
	}
	switch {
	case b.Jitter == 0 || b.Jitter > 1:
		b.Jitter = DefaultBackoff.Jitter
	case b.Jitter < 0:
		b.Jitter = 0
	}
	return b
}

// Delay returns the delay before attempt n (0 for the first retry), with
// jitter applied.
func (b Backoff) Delay(n int) time.Duration {
	d := float64(b.Base)
	for i := 0; i < n && d < float64(b.Max); i++ {
		d *= b.Multiplier
	}
	d = min(d, float64(b.Max))
	d *= 1 + b.Jitter*(2*rand.Float64()-1)
	return time.Duration(d)
}
