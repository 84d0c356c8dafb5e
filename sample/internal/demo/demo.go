// Package demo runs the sample control plane through a rolling upgrade
// from v1 to v2 with skew, checks that lockstep kept its promises, and
// reports what happened in a timeline a person reads at a glance, as text
// and as SVG and HTML files. It runs in one process through
// framework/upgradesim ([Run]), or as real processes of the sample's
// binaries on 127.0.0.1 ([RunProcesses]).
//
// The story: every component starts at v1. The kubelet is upgraded first
// and blocks, since its node controller still speaks only nodestatus
// 1.0.0; the node controller follows after the skew and the kubelet's
// blocked calls go through at once, while the scheduler, still v1, now
// blocks on nodehealth until it is upgraded too. The scheduler's v2 runs
// in fork mode, so it keeps calling its v1 extender, and the plain
// Kubernetes extender that is never upgraded, at 1.0.0 throughout; the
// extender's v2 (also in fork mode) comes last and the scheduler agrees on
// 2.0.0 with it.
//
// Then a minor release rolls out with no fork mode and no block:
// nodestatus 2.1.0 adds a node's kernel version, and derives from 2.0.0
// compatibly, so the generated code of both sides speaks both versions.
// The kubelet moves to v2.1 first and goes on at 2.0.0 with its v2 node
// controller; the node controller's replicas follow, and the kubelet
// agrees on 2.1.0 with each, its kernel versions reaching them.
//
// Throughout, the scheduler places pods and posts their bindings to the
// node controller, whose replicas share the record of bound pods and
// publish it as the PodAssignment topic; the kubelet's nodes each run the
// pods assigned to them and report them Running. The timeline shows both
// ends of that loop, and an invariant holds every pod to running on the
// node the scheduler chose within a bound.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// Options shape a run.
type Options struct {
	// Out receives the report; nil discards it.
	Out io.Writer
	// OutputDir receives timeline.svg, timeline.html, timeline.txt and the
	// components' logs (components.log); empty writes no files.
	OutputDir string
	// Skew is how long one side of a pair runs v2 before the other; default
	// 1s.
	Skew time.Duration
	// Nodes is how many nodes the kubelet simulates; default 8.
	Nodes int

	// BinDir is where [RunProcesses] builds the binaries; default a
	// temporary folder, removed afterwards.
	BinDir string
	// DNSServer, if set, makes [RunProcesses] give the kubelet and the
	// scheduler the node controller as a DNS name, NodeControllerName,
	// resolved by this server (host:port) for A records.
	DNSServer string
}

func (o *Options) defaults() {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Skew <= 0 {
		o.Skew = time.Second
	}
	if o.Nodes <= 0 {
		o.Nodes = 8
	}
}

// PlanConditions are what [Plan] waits for between its steps.
type PlanConditions struct {
	// PodsRunning holds once the v1 kubelet runs pods the v1 scheduler
	// placed, so the loop is seen across every upgrade; Preempted once the
	// v1 scheduler placed a pod by preemption. The plan waits for both
	// before the first upgrade.
	PodsRunning, Preempted upgradesim.Condition
	// RanAfter holds once a pod placed after the step began ran: the loop
	// seen whole at v2, after the major upgrade. RanAfterMinor is the
	// same after the minor one.
	RanAfter, RanAfterMinor upgradesim.Condition
	// KernelsReported holds once a node controller heard a node's kernel
	// version, which only nodestatus 2.1.0 carries.
	KernelsReported upgradesim.Condition
}

// Plan is the rolling upgrade, step by step: the major one, v1 → v2, then
// the minor one, v2 → v2.1, of the kubelet and the node controller.
func Plan(skew time.Duration, cond PlanConditions) upgradesim.Plan {
	podsRunning, preempted, ranAfter := cond.PodsRunning, cond.Preempted, cond.RanAfter
	connected := upgradesim.WaitUntil(upgradesim.Connected, 10*time.Second)
	return upgradesim.Plan{Name: "rolling upgrade v1 → v2 → v2.1", Steps: []upgradesim.Step{
		upgradesim.Start(LegacyExtender, "v1"),
		upgradesim.Start(Extender, "v1"),
		upgradesim.Start(upgradesim.Replica(NodeController, 0), "v1"),
		upgradesim.Start(upgradesim.Replica(NodeController, 1), "v1"),
		upgradesim.Start(upgradesim.Replica(NodeController, 2), "v1"),
		upgradesim.Start(Kubelet, "v1"),
		upgradesim.Start(Scheduler, "v1"),
		connected,
		upgradesim.WaitUntil(upgradesim.CallsAcknowledged(40), 10*time.Second),
		upgradesim.WaitUntil(podsRunning, 10*time.Second),
		// The nodes fill, and a pod of higher priority is placed by
		// preempting pods of lower priority.
		upgradesim.WaitUntil(preempted, 10*time.Second),
		// The kubelet comes up first: it blocks.
		upgradesim.Upgrade(Kubelet, "v2"),
		upgradesim.Wait(skew),
		// Its node controller follows, one replica after another: the
		// kubelet goes on with the first; the writer of NodeHealth moves
		// as its replica restarts, and the schedulers' informers follow
		// it; once no replica speaks 1.0.0, the v1 scheduler blocks on
		// nodehealth.
		upgradesim.Upgrade(upgradesim.Replica(NodeController, 0), "v2"),
		upgradesim.Wait(skew / 4),
		upgradesim.Upgrade(upgradesim.Replica(NodeController, 1), "v2"),
		upgradesim.Wait(skew / 4),
		upgradesim.Upgrade(upgradesim.Replica(NodeController, 2), "v2"),
		upgradesim.Wait(skew),
		// The scheduler follows, in fork mode: 1.0.0 extenders go on.
		upgradesim.Upgrade(Scheduler, "v2"),
		connected,
		upgradesim.WaitUntil(upgradesim.CallsAcknowledged(40), 10*time.Second),
		// The extender follows, in fork mode too.
		upgradesim.Upgrade(Extender, "v2"),
		connected,
		upgradesim.WaitUntil(upgradesim.CallsAcknowledged(60), 10*time.Second),
		// The to-node loop at v2 end to end: the v2 scheduler places a pod
		// through a v2 node controller, and the v2 kubelet runs it.
		upgradesim.WaitUntil(ranAfter, 10*time.Second),
		// A minor release, nodestatus 2.1.0, with no fork mode: the
		// kubelet comes up first and does not block, since it speaks
		// 2.0.0 too.
		upgradesim.Upgrade(Kubelet, "v2.1"),
		upgradesim.WaitUntil(upgradesim.CallsAcknowledged(40), 10*time.Second),
		// Its node controller follows, one replica after another; each
		// serves 2.0.0 and 2.1.0, and the kubelet agrees on 2.1.0.
		upgradesim.Upgrade(upgradesim.Replica(NodeController, 0), "v2.1"),
		upgradesim.Wait(skew / 4),
		upgradesim.Upgrade(upgradesim.Replica(NodeController, 1), "v2.1"),
		upgradesim.Wait(skew / 4),
		upgradesim.Upgrade(upgradesim.Replica(NodeController, 2), "v2.1"),
		connected,
		upgradesim.WaitUntil(cond.KernelsReported, 10*time.Second),
		upgradesim.WaitUntil(cond.RanAfterMinor, 10*time.Second),
	}}
}

// Result is a finished run.
type Result struct {
	// Report is upgradesim's report of the run.
	Report *upgradesim.Report
	// Files are the files written.
	Files []string
}

// ErrInvariant is the error of a run in which an invariant broke.
var ErrInvariant = errors.New("an invariant broke")

// Run runs the control plane in this process through the rolling upgrade
// and reports it to opts.Out. The error wraps [ErrInvariant] when an
// invariant broke; the result is returned with it.
func Run(ctx context.Context, opts Options) (*Result, error) {
	opts.defaults()
	ids, err := newIdentities()
	if err != nil {
		return nil, err
	}
	defer ids.close()
	w := newWorld(opts.Nodes, 3*opts.Skew, ids)
	cfg := w.config()
	var logFile *os.File
	if opts.OutputDir != "" {
		if err := os.MkdirAll(opts.OutputDir, 0o755); err != nil {
			return nil, err
		}
		var err error
		if logFile, err = os.Create(filepath.Join(opts.OutputDir, "components.log")); err != nil {
			return nil, err
		}
		defer logFile.Close()
		cfg.Logger = slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	sim, err := upgradesim.New(cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Out, "lockstep demo: the sample control plane through a rolling upgrade v1 → v2, then a minor one v2 → v2.1 with no fork mode, skew %s, %d nodes, in one process, over mutual TLS (lockstep://<component>/<name> certificates from a CA of the run's own)\n\n",
		opts.Skew, opts.Nodes)
	// The run's clock starts within a few milliseconds of t0 (once its
	// addresses are reserved): close enough for the loop's rows.
	t0 := time.Now()
	rep, err := sim.Execute(ctx, Plan(opts.Skew, PlanConditions{
		PodsRunning: w.loop.running(3), Preempted: w.loop.preemptedCondition(),
		RanAfter: w.loop.ranSince(), RanAfterMinor: w.loop.ranSince(), KernelsReported: w.kernelsReported(),
	}))
	if err != nil {
		return nil, err
	}
	rep.Timeline.Calls = append(rep.Timeline.Calls, w.loop.series(t0)...)
	res := &Result{Report: rep}
	sum := summarize(rep, "one process", inProcessInvariants)
	sum.outcomes = w.outcomes()
	writeReport(opts.Out, sum)
	if opts.OutputDir != "" {
		if res.Files, err = writeFiles(opts.OutputDir, rep.Timeline, sum); err != nil {
			return res, err
		}
		res.Files = append(res.Files, logFile.Name())
		fmt.Fprintf(opts.Out, "\nwritten: %v\n", res.Files)
	}
	if rep.Failed() {
		return res, fmt.Errorf("%w: %d violation(s)", ErrInvariant, len(rep.Violations))
	}
	return res, nil
}
