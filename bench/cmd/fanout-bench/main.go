// Command fanout-bench runs only the fan-out workload of the comparison
// suite (P4, P4s), at one watcher count, the chosen variants alternating
// round by round in one process, and prints each variant's medians with
// its p99 and CPU per delivery as ratios of the first variant's, and the
// host's load: the
// figures of one lever measured side by side without the rest of
// `make bench`. A second table gives what the Go runtime did per delivery
// (goroutine runs, thread switches, allocations, the collector's share of
// the CPU). With -profile DIR it writes, for each variant's first round, a
// CPU profile and an allocation profile of the round's measured part
// (DIR/<variant>.cpu.pprof, DIR/<variant>.allocs.pprof, the latter to read
// with -base DIR/<variant>.allocs-before.pprof), and with -trace D an
// execution trace of its first D. Each round starts from a settled heap
// (-no-settle leaves that out) with only its own variant's watchers open
// (-all-open keeps every variant's open through all the rounds): the
// conditions of `make bench` and the two to compare them with.
//
//	go run ./cmd/fanout-bench -watchers 1000 -variants ls,ls-copy,shared,grpc
//	go run ./cmd/fanout-bench -variants ls-copy -rounds 1 -profile /tmp/p
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"github.com/lockstep-dev/lockstep/bench/internal/suite"
)

// variants are the short names -variants takes.
var variants = map[string]string{
	"ls":       results.VFanLockstep,
	"ls-own":   results.VFanOwnStreams,
	"ls-copy":  results.VFanCopies,
	"shared":   results.VFanShared,
	"etcd":     results.VFanEtcd,
	"etcd-raw": results.VFanEtcdRaw,
	"grpc":     results.VFanGRPC,
	"grpc-raw": results.VFanGRPCRaw,
}

func main() {
	watchers := flag.Int("watchers", 1000, "watchers")
	rate := flag.Int("rate", 100, "writes per second")
	duration := flag.Duration("duration", 4*time.Second, "writing time of a round")
	rounds := flag.Int("rounds", 3, "rounds per variant")
	names := flag.String("variants", "ls,shared,grpc", "comma-separated variants: ls (each informer decoding), ls-copy (a copy each of one decode per client), ls-own (a stream per informer), shared, etcd, etcd-raw, grpc, grpc-raw")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
	profileDir := flag.String("profile", "", "write CPU and allocation profiles of each variant's first round into this folder")
	noSettle := flag.Bool("no-settle", false, "start rounds without the full collection that settles the heap first")
	allOpen := flag.Bool("all-open", false, "open every variant's watchers first and keep them open through all the rounds")
	traceFor := flag.Duration("trace", 0, "with -profile, also write an execution trace of the first this long of each variant's first round")
	flag.Parse()

	var chosen []string
	for _, n := range strings.Split(*names, ",") {
		v, ok := variants[n]
		if !ok {
			fail(fmt.Errorf("no variant %q", n))
		}
		chosen = append(chosen, v)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	cfg := suite.Config{Rounds: *rounds, Log: os.Stderr, NoSettle: *noSettle, FanoutAllOpen: *allOpen}
	if *profileDir != "" {
		if *profile != "" {
			fail(fmt.Errorf("-cpuprofile and -profile exclude each other"))
		}
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			fail(err)
		}
		cfg.Observe = profiler(*profileDir, *traceFor)
	}
	s := suite.New(cfg)
	if err := s.FanoutOnly(*watchers, []int{*rate}, *duration, chosen); err != nil {
		fail(err)
	}
	wl := results.FanoutWorkload(*watchers, *rate)
	fmt.Printf("%s, %d rounds of %s, medians\n", wl, *rounds, *duration)
	fmt.Printf("%-52s %8s %9s %9s %6s %9s %8s %8s %8s  %s\n", "variant", "p50 ms", "p99 ms", "max ms", "cores", "delivered",
		"µs/dlv", "p99 ×", "µs/dlv ×", "idle before each round")
	first := s.Results.Median(wl, chosen[0], results.MP99ms)
	firstCPU := s.Results.Median(wl, chosen[0], results.MCPUPerDelivery)
	for _, v := range chosen {
		p99 := s.Results.Median(wl, v, results.MP99ms)
		var idle []string
		for _, r := range s.Results.Rounds(wl, v) {
			idle = append(idle, fmt.Sprintf("%.0f%%", 100*r.Before.Idle))
		}
		cpu := s.Results.Median(wl, v, results.MCPUPerDelivery)
		fmt.Printf("%-52s %8.1f %9.1f %9.0f %6.2f %9.3f %8.2f %8.2f %8.2f  %s\n", v,
			s.Results.Median(wl, v, results.MP50ms), p99, s.Results.Median(wl, v, results.MMaxms),
			s.Results.Median(wl, v, results.MCores), s.Results.Median(wl, v, results.MDelivered),
			cpu, ratioOf(p99, first), ratioOf(cpu, firstCPU), strings.Join(idle, " "))
	}
	fmt.Printf("\nthe Go runtime per delivery, medians\n")
	fmt.Printf("%-52s %9s %9s %9s %9s %7s %6s %8s\n", "variant", "runs", "switches", "allocs", "alloc B", "GC %", "GCs", "heap MB")
	for _, v := range chosen {
		m := func(name string) float64 { return s.Results.Median(wl, v, name) }
		fmt.Printf("%-52s %9.2f %9.3f %9.1f %9.0f %7.1f %6.0f %8.0f\n", v, m(results.MRunsPerDelivery),
			m(results.MSwitchesPerDelivery), m(results.MAllocsPerDelivery), m(results.MAllocBytesPerDelivery),
			100*m(results.MGCShare), m(results.MGCCycles), m(results.MLiveHeapMB))
	}
}

// profiler profiles the measured part of each variant's first round into
// dir: CPU, allocations (before and after, for pprof -base) and, for
// traceFor, an execution trace.
func profiler(dir string, traceFor time.Duration) func(workload, variant string) func() {
	short := map[string]string{}
	for n, v := range variants {
		short[v] = n
	}
	seen := map[string]bool{}
	return func(workload, variant string) func() {
		if seen[variant] {
			return func() {}
		}
		seen[variant] = true
		base := filepath.Join(dir, short[variant])
		writeAllocs := func(path string) {
			f, err := os.Create(path)
			if err != nil {
				fail(err)
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fail(err)
			}
		}
		writeAllocs(base + ".allocs-before.pprof")
		cpu, err := os.Create(base + ".cpu.pprof")
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			fail(err)
		}
		stopTrace := func() {}
		if traceFor > 0 {
			tf, err := os.Create(base + ".trace")
			if err != nil {
				fail(err)
			}
			if err := trace.Start(tf); err != nil {
				fail(err)
			}
			t := time.AfterFunc(traceFor, trace.Stop)
			stopTrace = func() {
				if t.Stop() {
					trace.Stop()
				}
				_ = tf.Close()
			}
		}
		return func() {
			stopTrace()
			pprof.StopCPUProfile()
			_ = cpu.Close()
			writeAllocs(base + ".allocs.pprof")
		}
	}
}

func ratioOf(x, base float64) float64 {
	if base > 0 {
		return x / base
	}
	return math.NaN()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fanout-bench:", err)
	os.Exit(1)
}
