package route

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

var errNoPeer = apierror.Errorf(apierror.CodeUnavailable, "no peer")

// client is a route.Client whose routing never changes, on a fake clock;
// observed receives what Observe is told.
func client(t *testing.T, clock *clockwork.FakeClock) (*Client, chan time.Duration) {
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	observed := make(chan time.Duration, 1)
	never := make(chan struct{})
	return &Client{
		Clock: clock, Life: life, Delay: func(n int) time.Duration { return time.Duration(n+1) * time.Second },
		Changed:     func() <-chan struct{} { return never },
		FirstRounds: func(context.Context) error { return nil },
		NoPeer:      func() error { return errNoPeer },
		PeerState:   func() error { return errors.New("peer state") },
		Log:         func(string, time.Time, string) {},
		Observe:     func(d time.Duration) { observed <- d },
		Calls:       &Blocked{},
	}, observed
}

func TestUntilReadyAtOnceCountsNothing(t *testing.T) {
	c, observed := client(t, clockwork.NewFakeClock())
	w := &Wait{Client: c, Counted: true, Timeout: time.Second}
	require.NoError(t, w.Until(context.Background(), func() bool { return true }))
	w.Done()
	n, _ := c.Calls.Snapshot(c.Clock.Now())
	assert.Zero(t, n)
	assert.Empty(t, observed, "a wait that never blocked is not observed")
}

func TestFailFastFailsWithoutWaiting(t *testing.T) {
	c, _ := client(t, clockwork.NewFakeClock())
	w := &Wait{Client: c, FailFast: true, Counted: true}
	assert.Same(t, errNoPeer, w.Until(context.Background(), func() bool { return false }))
	w.Done()
}

func TestReadyTimeoutBoundsACountedWait(t *testing.T) {
	clock := clockwork.NewFakeClock()
	c, observed := client(t, clock)
	w := &Wait{Client: c, Counted: true, Timeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- w.Until(context.Background(), func() bool { return false }) }()
	require.NoError(t, clock.BlockUntilContext(context.Background(), 2)) // the log timer and the ready timeout
	n, _ := c.Calls.Snapshot(clock.Now())
	assert.Equal(t, 1, n, "the blocked call shows in the status")
	select {
	case err := <-errc:
		t.Fatalf("the wait ended before its timeout: %v", err)
	default:
	}
	clock.Advance(5 * time.Second)
	assert.Same(t, errNoPeer, <-errc)
	w.Done()
	assert.Equal(t, 5*time.Second, <-observed)
	n, _ = c.Calls.Snapshot(clock.Now())
	assert.Zero(t, n)
}

func TestPaceLetsFreeResendsGoAndBacksOffAfter(t *testing.T) {
	clock := clockwork.NewFakeClock()
	c, _ := client(t, clock)
	w := &Wait{Client: c, FreeResends: 1}
	require.NoError(t, w.Pace(context.Background(), 0))
	errc := make(chan error, 1)
	go func() { errc <- w.Pace(context.Background(), 1) }()
	require.NoError(t, clock.BlockUntilContext(context.Background(), 1))
	clock.Advance(time.Second) // Delay(0)
	require.NoError(t, <-errc)
}

func TestBlockedLogsAtMostOncePerLogEvery(t *testing.T) {
	var b Blocked
	now := time.Unix(1000, 0)
	assert.True(t, b.LogDue(now))
	assert.False(t, b.LogDue(now.Add(LogEvery-time.Nanosecond)))
	assert.True(t, b.LogDue(now.Add(LogEvery)))
	t1 := b.enter(now)
	b.enter(now.Add(time.Second))
	n, longest := b.Snapshot(now.Add(3 * time.Second))
	assert.Equal(t, 2, n)
	assert.Equal(t, 3*time.Second, longest)
	b.leave(t1)
	n, longest = b.Snapshot(now.Add(3 * time.Second))
	assert.Equal(t, 1, n)
	assert.Equal(t, 2*time.Second, longest)
}
