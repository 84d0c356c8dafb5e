package sessions

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// Expiry is a server's session clock: on every tick it sweeps what ages
// with it (Sweep) and closes the sessions that lapsed, those that no call
// or heartbeat renewed within TTL and that have no call in flight.
type Expiry[S Record[O], O any] struct {
	Table *Table[S, O]
	// Clock ticks every half Heartbeat (the interval clients are told to
	// heartbeat at); Now is its reading in nanoseconds since the server
	// started, as sessions' LastSeen is.
	Clock     clockwork.Clock
	Heartbeat time.Duration
	TTL       time.Duration
	Now       func() int64
	// Stop ends the loop when it is closed.
	Stop <-chan struct{}
	// Sweep runs first on every tick.
	Sweep func()
	// Busy reports whether a session has calls in flight: a long call
	// keeps its session alive.
	Busy func(S) bool
	// Lapsed is told of each session the clock removed.
	Lapsed func(S)
}

// Run ticks until Stop is closed, then closes done.
func (e Expiry[S, O]) Run(done chan struct{}) {
	defer close(done)
	period := e.Heartbeat / 2
	if period <= 0 {
		period = time.Millisecond
	}
	t := e.Clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-e.Stop:
			return
		case <-t.Chan():
			e.Sweep()
			for _, s := range e.Table.Expired(e.Now(), e.TTL) {
				if !e.Busy(s) && e.Table.Remove(s) {
					e.Lapsed(s)
				}
			}
		}
	}
}
