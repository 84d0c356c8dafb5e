package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/limits"
)

func TestExpiryClosesLapsedSessionsButNotBusyOrRenewedOnes(t *testing.T) {
	tab := newTable()
	const now = int64(10 * time.Second)
	idle := &rec{token: "t1", contract: "c", instance: "a", owner: "o", usage: &limits.Usage{}}
	busy := &rec{token: "t2", contract: "c", instance: "b", owner: "o", usage: &limits.Usage{}}
	renewed := &rec{token: "t3", contract: "c", instance: "c", owner: "p", usage: &limits.Usage{}, lastSeen: now - int64(time.Second)}
	for _, r := range []*rec{idle, busy, renewed} {
		_, err := tab.Put(r)
		require.NoError(t, err)
	}
	clock := clockwork.NewFakeClock()
	swept, lapsed := make(chan struct{}), make(chan *rec, 3)
	stop, done := make(chan struct{}), make(chan struct{})
	go Expiry[*rec, string]{Table: tab, Clock: clock, Heartbeat: time.Second, TTL: 5 * time.Second,
		Now: func() int64 { return now }, Stop: stop,
		Sweep:  func() { swept <- struct{}{} },
		Busy:   func(r *rec) bool { return r == busy },
		Lapsed: func(r *rec) { lapsed <- r },
	}.Run(done)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The second tick's sweep proves the first tick's sessions were all
	// looked at.
	for range 2 {
		require.NoError(t, clock.BlockUntilContext(ctx, 1), "the clock ticks")
		clock.Advance(500 * time.Millisecond)
		select {
		case <-swept:
		case <-ctx.Done():
			t.Fatal("the clock did not sweep")
		}
	}
	close(stop)
	<-done
	close(lapsed)
	var got []*rec
	for r := range lapsed {
		got = append(got, r)
	}
	assert.Equal(t, []*rec{idle}, got, "only the idle session without calls in flight lapses")
	assert.Nil(t, tab.Get("t1"))
	assert.Same(t, busy, tab.Get("t2"), "a long call keeps its session alive")
	assert.Same(t, renewed, tab.Get("t3"))
}
