package benchrun

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration // input, ascending
		q      float64         // quantile asked for
		want   time.Duration   // nearest-rank value
	}{
		{"empty", nil, 0.5, 0},
		{"one value is every percentile", []time.Duration{7}, 0.99, 7},
		{"median of 100", hundred, 0.5, 50 * time.Millisecond},
		{"p99 of 100 is rank 99, not the maximum", hundred, 0.99, 99 * time.Millisecond},
		{"p100 is the maximum", hundred, 1, 100 * time.Millisecond},
		{"p0 is the minimum", hundred, 0, time.Millisecond},
		{"median of an even pair is the lower", []time.Duration{1, 2}, 0.5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("Percentile(q=%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestRunMakesEveryCallOnceWithAtMostCallersAtATime(t *testing.T) {
	const n, callers = 500, 8
	seen := make([]atomic.Int32, n)
	var running, peak atomic.Int32
	r := Run(n, callers, func(i int) error {
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		seen[i].Add(1)
		time.Sleep(50 * time.Microsecond) // real time: Run measures latencies on the wall clock, so each call takes at least this
		running.Add(-1)
		return nil
	})
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("call %d made %d times", i, c)
		}
	}
	if p := peak.Load(); p > callers || p < 2 {
		t.Errorf("peak concurrency %d, want between 2 and %d", p, callers)
	}
	if r.Calls != n || len(r.Latencies) != n || r.Err() != nil {
		t.Fatalf("result: %d calls, %d latencies, err %v", r.Calls, len(r.Latencies), r.Err())
	}
	for i := 1; i < n; i++ {
		if r.Latencies[i] < r.Latencies[i-1] {
			t.Fatal("latencies are not sorted")
		}
	}
	if r.Percentile(0.5) < 50*time.Microsecond {
		t.Errorf("median %v is below the 50µs every call slept", r.Percentile(0.5))
	}
	if r.PerSecond() <= 0 || r.Wall <= 0 {
		t.Errorf("rate %v over %v", r.PerSecond(), r.Wall)
	}
}

func TestRunCountsFailuresAndKeepsTheFirst(t *testing.T) {
	boom := errors.New("boom")
	r := Run(10, 1, func(i int) error {
		if i%5 == 4 {
			return boom
		}
		return nil
	})
	if r.Failed != 2 || !errors.Is(r.Err(), boom) {
		t.Fatalf("Failed = %d, Err = %v; want 2 and boom", r.Failed, r.Err())
	}
}

func TestCPUMeterSeesBusyWork(t *testing.T) {
	// Spin until the meter sees 20ms of CPU, bounded by 10s of wall time: on
	// a loaded machine spinning for a fixed wall time may get little CPU.
	// The process cannot have used more CPU than wall time on every core.
	cpu := StartCPU()
	start := time.Now()
	x := 0
	for cpu.Used() < 20*time.Millisecond && time.Since(start) < 10*time.Second {
		for range 100_000 {
			x++
		}
	}
	used, wall := cpu.Used(), time.Since(start)
	if used < 20*time.Millisecond {
		t.Errorf("%v of spinning measured as %v of CPU (x=%d)", wall, used, x)
	}
	if most := time.Duration(runtime.NumCPU())*wall + 50*time.Millisecond; used > most {
		t.Errorf("%v of spinning measured as %v of CPU, more than %v on %d cores", wall, used, most, runtime.NumCPU())
	}
}

func TestLiveMemorySeesRetainedObjects(t *testing.T) {
	before := LiveMemory()
	keep := make([][]byte, 100)
	for i := range keep {
		keep[i] = make([]byte, 10<<10)
	}
	after := LiveMemory()
	per := PerItem(before, after, len(keep))
	if per < 9<<10 || per > 20<<10 {
		t.Errorf("100 retained 10 KiB buffers measured as %.0f bytes each", per)
	}
	if len(keep[99]) != 10<<10 {
		t.Fatal("buffers lost")
	}
}

func TestRunForStopsAtTheCallCap(t *testing.T) {
	const maxCalls = 300
	seen := make([]atomic.Int32, maxCalls)
	r := RunFor(time.Hour, maxCalls, 4, func(i int) error {
		seen[i].Add(1)
		if i == 7 {
			return errors.New("seven")
		}
		return nil
	})
	if r.Calls != maxCalls || len(r.Latencies) != maxCalls {
		t.Fatalf("RunFor made %d calls (%d latencies), want %d", r.Calls, len(r.Latencies), maxCalls)
	}
	for i := range seen {
		if got := seen[i].Load(); got != 1 {
			t.Fatalf("call %d was made %d times, want once", i, got)
		}
	}
	if r.Failed != 1 || r.FirstErr == nil || r.FirstErr.Error() != "seven" {
		t.Fatalf("failures: %d, first %v; want 1, seven", r.Failed, r.FirstErr)
	}
}

func TestRunForStopsAtTheTimeLimit(t *testing.T) {
	// Every call blocks until the test lets it go, so the only way RunFor
	// returns before the cap is its time limit.
	release := make(chan struct{})
	var started atomic.Int64
	done := make(chan Result, 1)
	go func() {
		done <- RunFor(20*time.Millisecond, 1<<30, 2, func(int) error {
			if started.Add(1) > 2 {
				return nil
			}
			<-release
			return nil
		})
	}()
	require.Eventually(t, func() bool { return started.Load() == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(30 * time.Millisecond) // real time: RunFor's limit is on the wall clock; this passes it while both calls are in flight
	close(release)
	r := <-done
	if r.Calls != 2 {
		t.Fatalf("RunFor made %d calls, want the 2 started before its limit passed", r.Calls)
	}
}
