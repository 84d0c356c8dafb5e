// Package benchrun holds what the framework's benchmarks and the comparison
// suite (the nested module bench/) share: a closed load loop over a fixed
// number of callers that records every call's latency, a process CPU meter
// (getrusage, user plus system), and a live-memory meter, so every variant
// of a side-by-side comparison is measured by the very same code. It lives
// outside internal/ so that the bench module can import it; it is no API
// with compatibility promises.
package benchrun

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what one [Run] measured.
type Result struct {
	// Calls is how many calls were made; Failed how many of them returned
	// an error.
	Calls, Failed int
	// Wall is the time from the first call's start to the last call's end.
	Wall time.Duration
	// CPU is the process's user plus system CPU time spent meanwhile, zero
	// where the platform cannot tell.
	CPU time.Duration
	// Latencies holds every call's latency, sorted ascending.
	Latencies []time.Duration
	// FirstErr is the first error a call returned.
	FirstErr error
}

// Run makes n calls over callers goroutines, each caller starting its next
// call as soon as its last one returns (a closed loop), and measures them.
// call receives the call's index in [0, n).
func Run(n, callers int, call func(i int) error) Result {
	if callers < 1 {
		panic("lockstep: benchrun.Run needs at least one caller")
	}
	lat := make([]time.Duration, n)
	var next, failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	cpu := StartCPU()
	start := time.Now()
	for range min(callers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				err := call(i)
				lat[i] = time.Since(t0)
				if err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	used := cpu.Used()
	slices.Sort(lat)
	return Result{Calls: n, Failed: int(failed.Load()), Wall: wall, CPU: used, Latencies: lat, FirstErr: firstErr}
}

// Err returns an error naming how many calls failed and the first failure,
// or nil when every call succeeded.
func (r Result) Err() error {
	if r.Failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d calls failed; the first: %w", r.Failed, r.Calls, r.FirstErr)
}

// PerSecond returns the calls completed per second of wall time.
func (r Result) PerSecond() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Wall.Seconds()
}

// Percentile returns the latency at quantile q (0.5 for the median, 0.99),
// by the nearest-rank method, or zero when nothing was recorded.
func (r Result) Percentile(q float64) time.Duration {
	return Percentile(r.Latencies, q)
}

// CPUPerCall returns the process CPU time per call.
func (r Result) CPUPerCall() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Calls)
}

// Percentile returns the value at quantile q of sorted (ascending) by the
// nearest-rank method: the smallest value with at least q of all values at
// or below it. It returns zero for an empty slice.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The epsilon keeps 100×0.99 at rank 99 despite rounding.
	rank := int(math.Ceil(float64(len(sorted))*q - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// CPU is a running measurement of the process's CPU time, started by
// [StartCPU].
type CPU struct {
	start time.Duration
}

// StartCPU starts measuring the process's user plus system CPU time.
func StartCPU() CPU { return CPU{start: processCPU()} }

// Used returns the CPU time the process spent since [StartCPU].
func (c CPU) Used() time.Duration { return processCPU() - c.start }

// Memory is a snapshot of the memory the process holds live, taken after
// collecting garbage.
type Memory struct {
	// Heap is the bytes of live heap objects (MemStats.HeapAlloc after a
	// collection).
	Heap uint64
	// Stacks is the bytes of goroutine stacks in use (MemStats.StackInuse).
	Stacks uint64
	// Goroutines is how many goroutines exist.
	Goroutines int
}

// Total returns heap plus stacks: what the process keeps for its live
// objects and goroutines.
func (m Memory) Total() uint64 { return m.Heap + m.Stacks }

// LiveMemory collects garbage twice (so objects freed by finalizers go
// too) and returns what remains.
func LiveMemory() Memory {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{Heap: ms.HeapAlloc, Stacks: ms.StackInuse, Goroutines: runtime.NumGoroutine()}
}

// PerItem returns how many bytes each of n items added between before and
// after; negative when memory shrank.
func PerItem(before, after Memory, n int) float64 {
	if n == 0 {
		return 0
	}
	return (float64(after.Total()) - float64(before.Total())) / float64(n)
}

// RunFor is [Run] bounded by time as well as count: callers goroutines
// call in a closed loop until limit has passed or maxCalls calls were
// started, whichever comes first. call receives the call's index.
func RunFor(limit time.Duration, maxCalls, callers int, call func(i int) error) Result {
	if callers < 1 {
		panic("lockstep: benchrun.RunFor needs at least one caller")
	}
	perCaller := make([][]time.Duration, callers)
	var next, failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	cpu := StartCPU()
	start := time.Now()
	deadline := start.Add(limit)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1024)
			for {
				i := int(next.Add(1) - 1)
				if i >= maxCalls {
					break
				}
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				err := call(i)
				lat = append(lat, time.Since(t0))
				if err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
				}
			}
			perCaller[c] = lat
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	used := cpu.Used()
	var lat []time.Duration
	for _, l := range perCaller {
		lat = append(lat, l...)
	}
	slices.Sort(lat)
	return Result{Calls: len(lat), Failed: int(failed.Load()), Wall: wall, CPU: used, Latencies: lat, FirstErr: firstErr}
}
