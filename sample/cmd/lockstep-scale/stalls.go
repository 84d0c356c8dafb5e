package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime/metrics"
	"time"
)

// The runtime's metrics a stall log reads: what may hold a heartbeat up
// inside a process (its garbage collector, and how long its runnable
// goroutines wait for a thread).
const (
	gcCycles    = "/gc/cycles/total:gc-cycles"
	gcAssistCPU = "/cpu/classes/gc/mark/assist:cpu-seconds"
	gcTotalCPU  = "/cpu/classes/gc/total:cpu-seconds"
	schedWait   = "/sched/latencies:seconds"
	gcPauses    = "/sched/pauses/total/gc:seconds"
	heapLive    = "/gc/heap/live:bytes"
)

// stallLog writes to w, every second until ctx ends, one line of what
// may have held this process's heartbeats up in that second, with the
// wall-clock time, so that the lines of the node controller's process
// and of the hollow nodes' can be read side by side: garbage collections
// that ended, the CPU the collector took (and its assists, taken from the
// goroutines that allocate), the longest pause, the 99th percentile and
// the maximum of how long a runnable goroutine waited to run, the live
// heap; and, with slow set, how many heartbeats over 100 ms ended in that
// second. It reads the runtime's own metrics (runtime/metrics).
func stallLog(ctx context.Context, w io.Writer, name string, slow func() int64) {
	samples := []metrics.Sample{{Name: gcCycles}, {Name: gcAssistCPU}, {Name: gcTotalCPU}, {Name: schedWait}, {Name: gcPauses}, {Name: heapLive}}
	metrics.Read(samples)
	prev := stallSample(samples)
	var prevSlow int64
	if slow != nil {
		prevSlow = slow()
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			metrics.Read(samples)
			cur := stallSample(samples)
			line := fmt.Sprintf("stalls %s %s gc=%d gcCPU=%.0fms assist=%.0fms pauseMax=%.1fms wait99=%.1fms waitMax=%.1fms live=%.0fMiB",
				name, now.UTC().Format("15:04:05"), cur.cycles-prev.cycles, 1000*(cur.gcCPU-prev.gcCPU), 1000*(cur.assist-prev.assist),
				1000*maxOf(cur.pauses, prev.pauses), 1000*quantileOf(cur.wait, prev.wait, 0.99), 1000*maxOf(cur.wait, prev.wait), cur.live/(1<<20))
			if slow != nil {
				n := slow()
				line += fmt.Sprintf(" slowBeats=%d", n-prevSlow)
				prevSlow = n
			}
			fmt.Fprintln(w, line)
			prev = cur
		}
	}
}

// stallFigures is one reading of the runtime's metrics.
type stallFigures struct {
	cycles              uint64
	assist, gcCPU, live float64
	wait, pauses        *metrics.Float64Histogram
}

func stallSample(s []metrics.Sample) stallFigures {
	var f stallFigures
	if s[0].Value.Kind() == metrics.KindUint64 {
		f.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		f.assist = s[1].Value.Float64()
	}
	if s[2].Value.Kind() == metrics.KindFloat64 {
		f.gcCPU = s[2].Value.Float64()
	}
	if s[3].Value.Kind() == metrics.KindFloat64Histogram {
		f.wait = copyHistogram(s[3].Value.Float64Histogram())
	}
	if s[4].Value.Kind() == metrics.KindFloat64Histogram {
		f.pauses = copyHistogram(s[4].Value.Float64Histogram())
	}
	if s[5].Value.Kind() == metrics.KindUint64 {
		f.live = float64(s[5].Value.Uint64())
	}
	return f
}

// copyHistogram copies h: metrics.Read reuses a histogram's memory.
func copyHistogram(h *metrics.Float64Histogram) *metrics.Float64Histogram {
	return &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: append([]float64(nil), h.Buckets...)}
}

// quantileOf is the upper bound of the bucket holding the q-quantile of
// what cur counted since prev (seconds), 0 if nothing.
func quantileOf(cur, prev *metrics.Float64Histogram, q float64) float64 {
	if cur == nil || prev == nil || len(cur.Counts) != len(prev.Counts) {
		return 0
	}
	var total uint64
	for i := range cur.Counts {
		total += cur.Counts[i] - prev.Counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range cur.Counts {
		if seen += cur.Counts[i] - prev.Counts[i]; seen >= max(rank, 1) {
			return upper(cur.Buckets, i)
		}
	}
	return 0
}

// maxOf is the upper bound of the highest bucket that counted anything
// since prev (seconds).
func maxOf(cur, prev *metrics.Float64Histogram) float64 {
	if cur == nil || prev == nil || len(cur.Counts) != len(prev.Counts) {
		return 0
	}
	for i := len(cur.Counts) - 1; i >= 0; i-- {
		if cur.Counts[i] > prev.Counts[i] {
			return upper(cur.Buckets, i)
		}
	}
	return 0
}

// upper is bucket i's upper bound, its lower one for the last, open
// bucket.
func upper(buckets []float64, i int) float64 {
	if math.IsInf(buckets[i+1], 1) {
		return buckets[i]
	}
	return buckets[i+1]
}
