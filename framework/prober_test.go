package framework

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusingDialer refuses every dial until open is set, then connects to
// one end of a pipe; it counts the dials.
type refusingDialer struct {
	open  atomic.Bool
	dials atomic.Int64
}

func (d *refusingDialer) dial(context.Context, string) (net.Conn, error) {
	d.dials.Add(1)
	if !d.open.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

// However many endpoints of a process wait for one dark address, it is
// dialled once per probe interval; when a dial connects, every waiter is
// woken at once. On a fake clock: 50 waiters, 100 intervals, 100 dials
// (each of them would have made one per backoff step on its own).
func TestOneProberDialsADarkAddressOncePerIntervalHoweverManyWait(t *testing.T) {
	clock := clockwork.NewFakeClock()
	d := &refusingDialer{}
	p := newProbers(clock, d.dial)
	a := p.at("127.0.0.1:9")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const waiters = 50
	var wg sync.WaitGroup
	var found atomic.Int64
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a.waitListening(ctx, nil) {
				found.Add(1)
			}
		}()
	}
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.waiters == waiters
	}, 10*time.Second, time.Millisecond)

	const intervals = 100
	for i := range intervals {
		require.NoError(t, clock.BlockUntilContext(ctx, 1), "the prober waits for its next dial")
		clock.Advance(2 * probeInterval)
		require.Eventually(t, func() bool { return d.dials.Load() == int64(i+1) }, 10*time.Second, time.Millisecond,
			"one dial per interval")
	}
	assert.Equal(t, int64(intervals), d.dials.Load())
	assert.Zero(t, found.Load(), "no waiter was woken while the address refused")

	d.open.Store(true)
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(2 * probeInterval)
	wg.Wait()
	assert.Equal(t, int64(waiters), found.Load(), "every waiter was woken by the one dial that connected")
	assert.Equal(t, int64(intervals+1), d.dials.Load())
	assert.Equal(t, int64(intervals+1), p.statsOf("127.0.0.1:9").dials.Load())

	// With nobody waiting, the loop ends and the prober is forgotten.
	require.Eventually(t, func() bool { return p.lookup("127.0.0.1:9") == nil }, 10*time.Second, time.Millisecond)
}

// A close from an address where no session is held starts no check; one
// from an address where sessions are held starts one, and more closes
// within the probe interval start none. A check that connects asks the
// groups there to beat now; one that is refused counts a crash.
func TestAPeerCloseStartsOneCheckWhereSessionsAreHeld(t *testing.T) {
	clock := clockwork.NewFakeClock()
	d := &refusingDialer{}
	d.open.Store(true)
	p := newProbers(clock, d.dial)
	const url, addr = "http://127.0.0.1:9", "127.0.0.1:9"
	p.peerClosed(addr)
	assert.Zero(t, p.statsOf(addr).checks.Load(), "a close where nothing is held started a check")

	g := &beatGroup{key: beatKey{url: url}, addr: dialAddr(url), now: make(chan struct{}, 1), h: NewHeartbeats(nil, clock)}
	p.register(g)
	p.peerClosed(addr)
	p.peerClosed(addr)
	assert.Equal(t, int64(1), p.statsOf(addr).checks.Load())
	select {
	case <-g.now:
	case <-time.After(10 * time.Second):
		t.Fatal("the check did not ask the group to beat")
	}
	assert.Zero(t, p.statsOf(addr).crashes.Load())

	d.open.Store(false)
	require.Eventually(t, func() bool {
		a := p.lookup(addr)
		a.mu.Lock()
		defer a.mu.Unlock()
		return !a.checking
	}, 10*time.Second, time.Millisecond)
	clock.Advance(probeInterval)
	p.peerClosed(addr)
	require.Eventually(t, func() bool { return p.statsOf(addr).crashes.Load() == 1 }, 10*time.Second, time.Millisecond,
		"a refused check counts a crash")
	assert.Equal(t, int64(2), p.statsOf(addr).checks.Load())
	p.unregister(g)
}
