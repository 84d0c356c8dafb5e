// Package procstat samples what the Go runtime did in this process between
// two points: goroutine runs (each a wakeup of a goroutine that was
// waiting or runnable), the share of CPU the garbage collector took,
// bytes and objects allocated, collections and the live heap. The fan-out
// workloads divide them by deliveries, so a lever's effect on wakeups and
// garbage is a figure beside its CPU and latency.
package procstat

import (
	"runtime/metrics"
	"syscall"
)

// The runtime metrics read (see runtime/metrics).
const (
	// schedLatencies holds one sample per goroutine run the runtime
	// tracks: one in runSampling (the runtime's gTrackingPeriod).
	schedLatencies = "/sched/latencies:seconds"
	gcCPU          = "/cpu/classes/gc/total:cpu-seconds"
	totalCPU       = "/cpu/classes/total:cpu-seconds"
	idleCPU        = "/cpu/classes/idle:cpu-seconds"
	allocBytes     = "/gc/heap/allocs:bytes"
	allocObjects   = "/gc/heap/allocs:objects"
	gcCycles       = "/gc/cycles/total:gc-cycles"
	liveHeap       = "/gc/heap/live:bytes"
)

// runSampling is how many goroutine runs each sample of schedLatencies
// stands for.
const runSampling = 8

// Sample is the runtime's counters at one point.
type Sample struct {
	runs, switches                  uint64
	gc, busy                        float64
	bytes, objects, cycles, heapNow uint64
}

// Take reads the counters now.
func Take() Sample {
	names := []string{schedLatencies, gcCPU, totalCPU, idleCPU, allocBytes, allocObjects, gcCycles, liveHeap}
	ms := make([]metrics.Sample, len(names))
	for i, n := range names {
		ms[i].Name = n
	}
	metrics.Read(ms)
	var s Sample
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.switches = uint64(ru.Nvcsw + ru.Nivcsw)
	}
	for _, m := range ms {
		switch m.Name {
		case schedLatencies:
			if m.Value.Kind() == metrics.KindFloat64Histogram {
				for _, c := range m.Value.Float64Histogram().Counts {
					s.runs += c
				}
			}
		case gcCPU:
			s.gc = float64Of(m)
		case totalCPU:
			s.busy += float64Of(m)
		case idleCPU:
			s.busy -= float64Of(m)
		case allocBytes:
			s.bytes = uint64Of(m)
		case allocObjects:
			s.objects = uint64Of(m)
		case gcCycles:
			s.cycles = uint64Of(m)
		case liveHeap:
			s.heapNow = uint64Of(m)
		}
	}
	return s
}

func float64Of(m metrics.Sample) float64 {
	if m.Value.Kind() == metrics.KindFloat64 {
		return m.Value.Float64()
	}
	return 0
}

func uint64Of(m metrics.Sample) uint64 {
	if m.Value.Kind() == metrics.KindUint64 {
		return m.Value.Uint64()
	}
	return 0
}

// Delta is what the runtime did between two samples.
type Delta struct {
	// Runs is about how many times a goroutine was scheduled to run
	// (the runtime samples one run in 8); Switches how many times the
	// process's threads were switched off a CPU (getrusage), which a
	// goroutine handed to a sleeping thread costs.
	Runs, Switches uint64
	// GCShare is the garbage collector's share of the CPU time the
	// runtime did not spend idle (its estimate: mark assists, background
	// marking and pauses).
	GCShare float64
	// Bytes and Objects are what was allocated on the heap, Cycles the
	// collections that ended, LiveHeap the live heap at the end.
	Bytes, Objects, Cycles, LiveHeap uint64
}

// Since returns what happened from s to now.
func (s Sample) Since() Delta {
	n := Take()
	d := Delta{Runs: runSampling * (n.runs - s.runs), Switches: n.switches - s.switches, Bytes: n.bytes - s.bytes, Objects: n.objects - s.objects,
		Cycles: n.cycles - s.cycles, LiveHeap: n.heapNow}
	if busy := n.busy - s.busy; busy > 0 {
		d.GCShare = (n.gc - s.gc) / busy
	}
	return d
}
