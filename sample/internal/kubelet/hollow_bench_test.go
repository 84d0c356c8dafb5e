package kubelet_test

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHollowNodes measures what a hollow node costs, under mutual TLS
// with a certificate of its own (its own connections, its own heartbeats)
// and in plain HTTP sharing one transport: the memory its sessions hold
// once every node has registered and watches its pod assignments (heap and
// goroutine stacks in use, after a collection), its goroutines, and the CPU
// its start took (certificate issuing excluded, handshakes, first report
// and watch included). Kubelet and node controller share the process, so
// each figure is both sides of a node together. LOCKSTEP_HOLLOW_NODES sets
// the number of nodes (default 200); run with -benchtime=1x.
func BenchmarkHollowNodes(b *testing.B) {
	nodes := 200
	if v, err := strconv.Atoi(os.Getenv("LOCKSTEP_HOLLOW_NODES")); err == nil && v > 0 {
		nodes = v
	}
	for _, mode := range []struct {
		name string
		mtls bool
	}{{"mtls-per-node", true}, {"plain-shared", false}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				before := inUse()
				goroutines := runtime.NumGoroutine()
				cpu := cpuTime()
				start := time.Now()
				h := startHollow(b, nodes, mode.mtls, 10*time.Second, 10*time.Second, 10*time.Second)
				for h.k.Ready() != nil || !h.k.Synced() || len(h.nc.Health()) < nodes {
					if time.Since(start) > 5*time.Minute {
						b.Fatalf("%d nodes not registered after 5 minutes", nodes)
					}
					time.Sleep(20 * time.Millisecond) // poll: registration of N nodes has no single event to wait on; bounded above
				}
				took := time.Since(start)
				used := cpuTime() - cpu
				b.ReportMetric(float64(inUse()-before)/float64(nodes), "B/node")
				b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(nodes), "goroutines/node")
				b.ReportMetric(float64(used.Microseconds())/float64(nodes), "cpu-µs/node-start")
				b.ReportMetric(took.Seconds(), "s-to-register")
				b.StopTimer()
				h.cancel()
				<-h.done
				h.k.Close()
				b.StartTimer()
			}
		})
	}
}

// inUse is the heap and goroutine stacks in use after a collection.
func inUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// cpuTime is the CPU the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
