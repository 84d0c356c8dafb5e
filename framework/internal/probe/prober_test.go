package probe

import (
	"context"
	"fmt"
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
// one end of a pipe; it counts the dials and, with a clock, notes when
// each was made.
type refusingDialer struct {
	open  atomic.Bool
	dials atomic.Int64
	clock clockwork.Clock

	mu sync.Mutex
	at []time.Time
}

// times returns when the dials were made.
func (d *refusingDialer) times() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.at...)
}

func (d *refusingDialer) dial(context.Context, string) (net.Conn, error) {
	d.dials.Add(1)
	if d.clock != nil {
		d.mu.Lock()
		d.at = append(d.at, d.clock.Now())
		d.mu.Unlock()
	}
	if !d.open.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

// noJitterBackoff is the default backoff without its jitter.
func noJitterBackoff() Backoff {
	b := DefaultBackoff
	b.Jitter = -1
	return WithDefaults(b)
}

// ownRedials is how many dials waiters clients would have made elapsed
// after a first refusal, each redialling on its own default backoff, as
// before the prober.
func ownRedials(waiters int, elapsed time.Duration) int {
	b := noJitterBackoff()
	n, at := 0, time.Duration(0)
	for k := 0; ; k++ {
		at += b.Delay(k)
		if at > elapsed {
			return n * waiters
		}
		n++
	}
}

// The prober of a dark address dials no more often than its waiters
// would have on their own, and wakes every waiter with the dial that
// connects. On a fake clock, 10 s dark, 1 ms at a time, for 1, 2 and 50
// waiters: at every dial, the prober's count is within what that many
// clients redialling on the default backoff (each on its own, as before
// the prober) would have made by then, and in every 250 ms at most one
// more than they would have made in it (the rate, not only the count);
// two dials are never closer than
// Interval; and the longest gap between dials, which bounds how late
// a listener is found, is one waiter's Backoff.Max for one waiter, half
// of it for two, Interval for fifty.
func TestAProberDialsADarkAddressNoMoreThanItsWaitersWouldHave(t *testing.T) {
	cases := []struct {
		waiters int
		maxGap  time.Duration // the longest gap between two dials once the backoff is at its Max
	}{
		{waiters: 1, maxGap: DefaultBackoff.Max},
		{waiters: 2, maxGap: DefaultBackoff.Max / 2},
		{waiters: 50, maxGap: Interval},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d waiters", tc.waiters), func(t *testing.T) {
			clock := clockwork.NewFakeClock()
			start := clock.Now()
			d := &refusingDialer{clock: clock}
			p := NewTable(clock, d.dial)
			a := p.At("127.0.0.1:9")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			var wg sync.WaitGroup
			var found atomic.Int64
			for range tc.waiters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if a.WaitListening(ctx, nil, nil, DefaultBackoff) {
						found.Add(1)
					}
				}()
			}
			require.Eventually(t, func() bool {
				a.mu.Lock()
				defer a.mu.Unlock()
				return a.waiters == tc.waiters
			}, 10*time.Second, time.Millisecond)

			const dark, tick = 10 * time.Second, time.Millisecond
			for range dark / tick {
				require.NoError(t, clock.BlockUntilContext(ctx, 1), "the prober waits for its next dial")
				clock.Advance(tick)
			}
			require.NoError(t, clock.BlockUntilContext(ctx, 1))
			times := d.times()
			require.NotEmpty(t, times)
			assert.Zero(t, found.Load(), "no waiter was woken while the address refused")

			noJitter := noJitterBackoff()
			before := func(elapsed time.Duration) int { return ownRedials(tc.waiters, elapsed) }
			// The rate too, not only the count: in every window of
			// rateWindow ending at a dial, the prober dialled at most one
			// more than those clients would have in it, each of their
			// redials spread evenly over the delay before it.
			var redials []time.Duration
			for k, at := 0, time.Duration(0); at <= dark; k++ {
				at += noJitter.Delay(k)
				redials = append(redials, at)
			}
			beforeIn := func(lo, hi time.Duration) float64 {
				var n float64
				prev := time.Duration(0)
				for _, r := range redials {
					if overlap := min(hi, r) - max(lo, prev); overlap > 0 {
						n += float64(overlap) / float64(r-prev)
					}
					prev = r
				}
				return n * float64(tc.waiters)
			}
			const rateWindow = 250 * time.Millisecond
			for i, at := range times {
				hi := at.Sub(start)
				in := 0
				for _, o := range times[:i+1] {
					if o.Sub(start) > hi-rateWindow {
						in++
					}
				}
				// beforeIn sums fractions of backoff steps, so a whole
				// count can come out a rounding error below itself: the
				// same 1e-9 the budget allows (prober_budget.go).
				assert.LessOrEqual(t, float64(in), beforeIn(hi-rateWindow, hi)+1+1e-9,
					"%d dials in the %v up to %v: faster than %d clients would have dialled then", in, rateWindow, hi, tc.waiters)
			}
			for _, p := range []time.Duration{500 * time.Millisecond, 2 * time.Second, dark} {
				in := 0
				for _, o := range times {
					if d := o.Sub(start); d > p-rateWindow && d <= p {
						in++
					}
				}
				t.Logf("%d waiters, %v dark: %.0f dials/s in the %v before (%.0f/s before the prober)", tc.waiters, p,
					float64(in)/rateWindow.Seconds(), rateWindow, beforeIn(p-rateWindow, p)/rateWindow.Seconds())
			}
			settled := start.Add(time.Second) // the backoff is at its Max well before
			var longest time.Duration
			for i, at := range times {
				assert.LessOrEqual(t, i+1, before(at.Sub(start)), "dial %d at %v: more than %d clients would have made",
					i+1, at.Sub(start), tc.waiters)
				if i == 0 {
					continue
				}
				gap := at.Sub(times[i-1])
				assert.GreaterOrEqual(t, gap, Interval, "dial %d", i+1)
				if times[i-1].After(settled) {
					longest = max(longest, gap)
				}
			}
			assert.LessOrEqual(t, longest, tc.maxGap+probeJitter+tick, "a listener would be found this late")
			assert.GreaterOrEqual(t, longest, tc.maxGap, "the prober dials more often than the budget allows")
			t.Logf("%d waiters, %v dark: %d dials (%d before the prober), longest gap %v",
				tc.waiters, dark, len(times), before(dark), longest)

			// The prober waits for its next dial (BlockUntil above); the
			// clock moves on until that dial connects.
			d.open.Store(true)
			require.Eventually(t, func() bool {
				if len(d.times()) == len(times) {
					clock.Advance(tick)
				}
				return found.Load() == int64(tc.waiters)
			}, 10*time.Second, time.Millisecond)
			wg.Wait()
			assert.Equal(t, int64(tc.waiters), found.Load(), "every waiter was woken by the one dial that connected")
			assert.Equal(t, int64(len(times)+1), p.StatsOf("127.0.0.1:9").Dials.Load())

			// With nobody waiting, the loop ends and the prober is forgotten.
			require.Eventually(t, func() bool { return p.Lookup("127.0.0.1:9") == nil }, 10*time.Second, time.Millisecond)
		})
	}
}

// A close from an address where no session is held starts no check; one
// from an address where sessions are held starts one, and more closes
// within the probe interval start none. A check that connects asks the
// groups there to beat now; one that is refused counts a crash.
func TestAPeerCloseStartsOneCheckWhereSessionsAreHeld(t *testing.T) {
	clock := clockwork.NewFakeClock()
	d := &refusingDialer{}
	d.open.Store(true)
	p := NewTable(clock, d.dial)
	const url, addr = "http://127.0.0.1:9", "127.0.0.1:9"
	p.PeerClosed(addr)
	assert.Zero(t, p.StatsOf(addr).Checks.Load(), "a close where nothing is held started a check")

	g := &fakeGroup{addr: DialAddr(url), now: make(chan struct{}, 1)}
	p.Register(g)
	p.PeerClosed(addr)
	p.PeerClosed(addr)
	assert.Equal(t, int64(1), p.StatsOf(addr).Checks.Load())
	select {
	case <-g.now:
	case <-time.After(10 * time.Second):
		t.Fatal("the check did not ask the group to beat")
	}
	assert.Zero(t, p.StatsOf(addr).Crashes.Load())

	d.open.Store(false)
	require.Eventually(t, func() bool {
		a := p.Lookup(addr)
		a.mu.Lock()
		defer a.mu.Unlock()
		return !a.checking
	}, 10*time.Second, time.Millisecond)
	clock.Advance(Interval)
	p.PeerClosed(addr)
	require.Eventually(t, func() bool { return p.StatsOf(addr).Crashes.Load() == 1 }, 10*time.Second, time.Millisecond,
		"a refused check counts a crash")
	assert.Equal(t, int64(1), g.unreachable.Load(), "a refused check tells the groups there that nothing listens")
	assert.Equal(t, int64(2), p.StatsOf(addr).Checks.Load())
	p.Unregister(g)
}

// An announced address is dialled at once, whatever the budget plans;
// announcements together are one dial, two announced dials are at least
// Interval apart, and the dials stay within the waiter's own count.
// One waiter, on a fake clock moved 1 ms at a time: 2 s dark (the budget
// dials every 100 ms by then), three announcements at once, one more
// right after, 1 s more dark, then a listener and its announcement.
func TestAnAnnouncedAddressIsDialledAtOnceAndWithinTheBudget(t *testing.T) {
	clock := clockwork.NewFakeClock()
	start := clock.Now()
	d := &refusingDialer{clock: clock}
	p := NewTable(clock, d.dial)
	a := p.At("127.0.0.1:9")
	plans := make(chan time.Time, 16)
	a.planned = func(at time.Time) {
		select {
		case plans <- at:
		default: // only the plans after the fourth announcement are read
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	found := make(chan bool, 1)
	go func() { found <- a.WaitListening(ctx, nil, nil, DefaultBackoff) }()
	const tick = time.Millisecond
	// advance moves the clock until elapsed from start, or until the
	// prober has made want dials when want > 0.
	advance := func(elapsed time.Duration, want int) {
		t.Helper()
		for clock.Since(start) < elapsed && (want == 0 || len(d.times()) < want) {
			require.NoError(t, clock.BlockUntilContext(ctx, 1), "the prober waits for its next dial")
			clock.Advance(tick)
		}
	}
	advance(2*time.Second, 0)
	// Past the tick's own dial, if it made one.
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	n := len(d.times())

	a.Announce()
	a.Announce()
	a.Announce()
	require.Eventually(t, func() bool { return len(d.times()) > n }, 10*time.Second, time.Millisecond,
		"the announcement was not dialled while the clock stood still")
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	announced := clock.Now()
	times := d.times()
	assert.Len(t, times, n+1, "three announcements together made more than one dial")
	assert.Equal(t, announced, times[n])

	for len(plans) > 0 {
		<-plans
	}
	a.Announce()
	// The loop plans the announced dial before the clock moves.
	for planned := false; !planned; {
		select {
		case at := <-plans:
			planned = at.Equal(announced.Add(Interval))
		case <-time.After(10 * time.Second):
			t.Fatal("the prober did not plan the announced dial Interval after the last")
		}
	}
	advance(3*time.Second, n+2)
	times = d.times()
	require.Len(t, times, n+2)
	assert.Equal(t, announced.Add(Interval), times[n+1],
		"an announcement right after an announced dial is dialled Interval after it")

	advance(3*time.Second, 0)
	assert.LessOrEqual(t, len(d.times()), ownRedials(1, 3*time.Second),
		"with its announcements the prober dialled more than the waiter would have")
	select {
	case <-found:
		t.Fatal("the waiter was woken while the address refused")
	default:
	}

	d.open.Store(true)
	a.Announce()
	select {
	case ok := <-found:
		assert.True(t, ok, "the waiter was not woken by the announced dial that connected")
	case <-time.After(10 * time.Second):
		t.Fatal("the announced dial that connects did not wake the waiter while the clock stood still")
	}
}

// fakeGroup is a heartbeat group of sessions held at addr: it notes a
// request to beat now, and how often it was told nothing listens.
type fakeGroup struct {
	addr        string
	now         chan struct{}
	unreachable atomic.Int64
}

func (g *fakeGroup) ProbeAddr() string { return g.addr }
func (g *fakeGroup) Unreachable(error) { g.unreachable.Add(1) }
func (g *fakeGroup) BeatNow() {
	select {
	case g.now <- struct{}{}:
	default:
	}
}

func TestBackoffGrowsToItsCapWithJitter(t *testing.T) {
	b := WithDefaults(Backoff{Base: 10 * time.Millisecond, Max: 80 * time.Millisecond, Multiplier: 2, Jitter: 0.2})
	for n, want := range []time.Duration{10, 20, 40, 80, 80, 80} {
		want *= time.Millisecond
		for i := 0; i < 50; i++ {
			d := b.Delay(n)
			assert.GreaterOrEqual(t, d, want*8/10, "attempt %d", n)
			assert.LessOrEqual(t, d, want*12/10, "attempt %d", n)
		}
	}
	def := WithDefaults(Backoff{})
	assert.Equal(t, DefaultBackoff, def)
}
