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
