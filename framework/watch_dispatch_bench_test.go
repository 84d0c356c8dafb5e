package framework_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
)

// BenchmarkInformerDelivery measures what an informer costs per delivery
// without a server or a connection: one client's 20 informers of the
// 1.5 KB NodeStatus on one feed, each decoding every frame itself
// (DecodeEach) or taking a copy of the feed's one decode, handed bursts of
// frames of distinct keys (1 or 10 a burst) as the feed's reader hands
// them on. An op is one burst taken by every informer; cpu-ns/delivery is
// the process's CPU per object handed to a handler, allocs/delivery and
// B/delivery what the heap was asked for per delivery, runs/delivery how
// many times a goroutine was scheduled to run per delivery (the wakeups;
// the benchmark's own goroutine is one a burst; the runtime samples
// one run in 8).
//
//	go test -run '^$' -bench InformerDelivery ./framework/
func BenchmarkInformerDelivery(b *testing.B) {
	const informers, keys = 20, 100
	raws := make([][]byte, keys)
	for k := range raws {
		raw, err := json.Marshal(benchmsg.Node(k))
		if err != nil {
			b.Fatal(err)
		}
		raws[k] = raw
	}
	keyOf := func(k int) string { return fmt.Sprintf("node-%04d", k) }
	for _, mode := range []string{"each", "copy"} {
		for _, burst := range []int{1, 10} {
			b.Run(fmt.Sprintf("%s/burst=%d", mode, burst), func(b *testing.B) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var delivered atomic.Int64
				var want atomic.Int64
				reached := make(chan struct{}, 1)
				got := func() {
					if delivered.Add(1) == want.Load() {
						reached <- struct{}{}
					}
				}
				snapshot := make([][]byte, keys)
				for k := range snapshot {
					snapshot[k] = framework.SetFrameLine(keyOf(k), 1, uint64(k+1), raws[k])
				}
				rig := framework.NewDispatchRig(ctx, informers, mode == "each", framework.InformerHandlers[benchgen.NodeStatus]{
					OnUpdate: func(string, *benchgen.NodeStatus, *benchgen.NodeStatus) { got() },
				}, snapshot)
				defer rig.Stop()
				// The frames are built before the clock starts: the
				// server's part is not measured.
				frames := make([][]byte, b.N*burst)
				for n := range frames {
					frames[n] = framework.SetFrameLine(keyOf(n%keys), uint64(n+2), uint64(keys+n+1), raws[n%keys])
				}
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				cpu0, runs0 := processCPU(), goroutineRuns()
				b.ResetTimer()
				for n := range b.N {
					want.Store(int64((n + 1) * burst * informers))
					for _, fr := range frames[n*burst : (n+1)*burst] {
						rig.Publish(fr)
					}
					rig.Wake()
					select {
					case <-reached:
					case <-time.After(10 * time.Second):
						b.Fatalf("informers took %d of %d deliveries", delivered.Load(), want.Load())
					}
				}
				b.StopTimer()
				cpu, runs := processCPU()-cpu0, goroutineRuns()-runs0
				runtime.ReadMemStats(&m1)
				n := float64(b.N * burst * informers)
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/delivery")
				b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/delivery")
				b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/delivery")
				b.ReportMetric(8*float64(runs)/n, "runs/delivery") // one sample per 8 runs
			})
		}
	}
}

// goroutineRuns is how many times the Go runtime scheduled a goroutine to
// run so far: the count of its scheduling latencies.
func goroutineRuns() uint64 {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n
}
