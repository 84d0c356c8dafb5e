package main

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
)

// The steady window's heartbeats are those between its start and its end:
// the slow ones of the start-up storm before it and of the stop after it
// are in the whole run's figures only.
func TestSteadyHeartbeatsAreTheWindowsAlone(t *testing.T) {
	var all kubelet.Latency
	for range 50 {
		all.Record(5 * time.Second) // the start-up storm
	}
	w := steadyWindow{start: all.Snapshot()}
	for range 1000 {
		all.Record(2 * time.Millisecond)
	}
	w.end = all.Snapshot()
	for range 50 {
		all.Record(3 * time.Second) // after the window: the kills' notice, the stop
	}

	var cs childStats
	cs.beats(&all, &w)
	assert.Equal(t, int64(1100), cs.Heartbeats)
	assert.Equal(t, int64(1000), cs.SteadyHeartbeats)
	assert.Less(t, cs.SteadyHeartbeatMaxMs, 10.0, "nothing from before or after the window")
	assert.Greater(t, cs.HeartbeatP99Ms, 1000.0, "the whole run keeps the slow ones")

	// A process stopped without the window's end counts to its stop.
	cs = childStats{}
	cs.beats(&all, &steadyWindow{start: w.start})
	assert.Equal(t, int64(1050), cs.SteadyHeartbeats)

	// And one whose window never began has no window figures.
	cs = childStats{}
	cs.beats(&all, &steadyWindow{})
	assert.Zero(t, cs.SteadyHeartbeats)
}

// A labelled counter counts every label's series.
func TestCounterSumsEverySeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	lapses := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lapses_total", Help: "h"}, []string{"contract"})
	require.NoError(t, reg.Register(lapses))
	lapses.WithLabelValues("nodestatus").Add(3)
	lapses.WithLabelValues("podassignments").Add(2)
	assert.Equal(t, 5.0, counter(reg, "lapses_total"))
	assert.Zero(t, counter(reg, "absent_total"))
}

// The heartbeats of several hollow processes are read together from their
// histograms: the quantiles of all of them, not of any one process, and
// the sums of their counts.
func TestHollowProcessesFiguresAreReadTogether(t *testing.T) {
	var a, b, both kubelet.Latency
	for range 990 {
		a.Record(time.Millisecond)
		both.Record(time.Millisecond)
	}
	for range 20 {
		b.Record(2 * time.Second) // one process's garbage collection
		both.Record(2 * time.Second)
	}
	var sa, sb childStats
	sa.beats(&a, &steadyWindow{start: new(kubelet.Latency)})
	sb.beats(&b, &steadyWindow{start: new(kubelet.Latency)})
	sa.Nodes, sb.Nodes, sa.StatusReports, sb.StatusReports = 3, 2, 10, 5
	got := mergeStats([]childStats{sa, sb})
	assert.Equal(t, 2, got.Processes)
	assert.Equal(t, 5, got.Nodes)
	assert.Equal(t, int64(15), got.StatusReports)
	assert.Equal(t, int64(1010), got.Heartbeats)
	assert.Equal(t, int64(1010), got.SteadyHeartbeats)
	assert.Equal(t, ms(both.Quantile(0.99)), got.HeartbeatP99Ms, "20 of 1010 took 2 s: the p99 is theirs")
	assert.InDelta(t, 2000, got.SteadyHeartbeatP99Ms, 2000*0.02)
	assert.InDelta(t, 1, got.SteadyHeartbeatP50Ms, 0.02)
	assert.Less(t, sa.SteadyHeartbeatP99Ms, 2.0, "a's own p99 knows nothing of b's")
}

// A hollow process that did not report its figures (killed when it did
// not stop in time) does not vanish from the run's: the run is marked
// failed, saying how many processes and nodes reported, and the figures
// of those that did are kept beside.
func TestAHollowProcessThatDidNotReportFailsTheRun(t *testing.T) {
	var a kubelet.Latency
	a.Record(time.Millisecond)
	var sa childStats
	sa.beats(&a, &steadyWindow{start: new(kubelet.Latency)})
	sa.Nodes = 3

	r := Result{Nodes: 6}
	keepBeats(&r, mergeStats([]childStats{sa, {}}), 2)
	assert.Equal(t, "1 of 2 hollow processes reported their figures, for 3 of 6 nodes: the heartbeat figures are not every node's", r.Failed)
	assert.Equal(t, int64(1), r.Heartbeats)

	r = Result{Nodes: 6}
	keepBeats(&r, mergeStats([]childStats{sa, sa}), 2)
	assert.Empty(t, r.Failed, "both reported, for every node")
	assert.Equal(t, int64(2), r.Heartbeats)

	r = Result{Nodes: 7}
	keepBeats(&r, mergeStats([]childStats{sa, sa}), 2)
	assert.NotEmpty(t, r.Failed, "their nodes are not the run's")
}

// The start rate is split over the hollow processes whole: the remainder
// goes to the first ones, so that together they start the nodes a second
// asked for; and a process's groups a second are its ticks, or fewer where
// its rate is not a multiple of them.
func TestTheStartRateIsSplitWhole(t *testing.T) {
	assert.Equal(t, []int{13, 13, 12, 12}, startShares(50, 4))
	assert.Equal(t, []int{50}, startShares(50, 1))
	assert.Equal(t, []int{17, 17, 16}, startShares(50, 3))
	assert.Equal(t, []int{1, 1, 1, 1}, startShares(3, 4), "at least one node a second each")
	assert.Equal(t, []int{50}, startShares(50, 0), "one process at least")

	group, tick := startGroups(50, 20)
	assert.Equal(t, 3, group)
	assert.Equal(t, 60*time.Millisecond, tick, "16.7 groups a second of 3, not 20")
	group, tick = startGroups(13, 20)
	assert.Equal(t, 1, group)
	assert.Equal(t, time.Second/13, tick, "13 groups a second of one node each")
	group, tick = startGroups(40, 20)
	assert.Equal(t, 2, group)
	assert.Equal(t, 50*time.Millisecond, tick)
}
