// Command fanout-bench runs only the fan-out workload of the comparison
// suite (P4, P4s), at one watcher count, the chosen variants alternating
// round by round in one process, and prints each variant's medians with
// its p99 and CPU per delivery as ratios of the first variant's, and the
// host's load: the
// figures of one lever measured side by side without the rest of
// `make bench`.
//
//	go run ./cmd/fanout-bench -watchers 1000 -variants ls,ls-copy,shared,grpc
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
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
	s := suite.New(suite.Config{Rounds: *rounds, Log: os.Stderr})
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
