// Command lockstep-demo runs the sample control plane (node controller,
// kubelet simulating several nodes, scheduler, a lockstep extender and a
// plain Kubernetes extender) through a rolling upgrade from v1 to v2 with
// skew, on 127.0.0.1, and prints a timeline: who ran which version when,
// which pairs were blocked and for how long, and the calls each pair
// served and failed. It writes the timeline as SVG and HTML too, and exits
// non-zero if an invariant broke.
//
//	cd sample && go run ./cmd/lockstep-demo               # in one process
//	cd sample && go run ./cmd/lockstep-demo -processes    # the sample's binaries as processes
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/lockstep-dev/lockstep/sample/internal/demo"
)

func main() {
	skew := flag.Duration("skew", time.Second, "how long one side of a pair runs v2 before the other")
	nodes := flag.Int("nodes", 8, "nodes the kubelet simulates")
	out := flag.String("out", "demo-output", "folder for timeline.svg, timeline.html, timeline.txt and the components' logs")
	processes := flag.Bool("processes", false, "build the sample's binaries and run them as separate processes")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := demo.Options{Out: os.Stdout, OutputDir: *out, Skew: *skew, Nodes: *nodes}
	var err error
	if *processes {
		_, err = demo.RunProcesses(ctx, opts)
	} else {
		_, err = demo.Run(ctx, opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockstep-demo:", err)
		os.Exit(1)
	}
}
