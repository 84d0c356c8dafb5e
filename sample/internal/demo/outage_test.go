package demo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// An outage opens at a SIGTERM (a second one while it lasts changes
// nothing) and closes at the first sample after it that saw the kubelet
// heard again.
func TestLoopOutagesOpenAtSIGTERMAndCloseWhenHeard(t *testing.T) {
	var o loopOutages
	o.heard(time.Second) // no outage: nothing to close
	o.begin(2 * time.Second)
	o.begin(3 * time.Second) // the node controller's SIGTERM while the kubelet's outage lasts
	o.heard(time.Second)     // a sample taken before the SIGTERM
	assert.Equal(t, loopOutages{{from: 2 * time.Second}}, o)
	assert.Equal(t, 3*time.Second, o.within(0, 5*time.Second), "an open outage lasts until the end asked about")
	o.heard(6 * time.Second)
	o.heard(7 * time.Second)
	assert.Equal(t, loopOutages{{from: 2 * time.Second, to: 6 * time.Second}}, o)
	assert.Equal(t, 4*time.Second, o.within(0, 10*time.Second))
	assert.Equal(t, time.Second, o.within(5*time.Second, 10*time.Second))
	assert.Zero(t, o.within(7*time.Second, 10*time.Second))
}

// A pod is held to runBound of its binding, less the outages between its
// binding and its report Running (or now, for one not yet Running).
func TestPodsRunWherePlacedLeavesOutagesOut(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	pod := func(bound float64, running ...float64) nodecontroller.Pod {
		p := nodecontroller.Pod{Namespace: "default", Name: "p", NodeName: "node-000",
			Phases: []nodecontroller.PhaseChange{{Phase: nsv2.PodStatusPhasePending, At: at(bound)}}}
		for _, r := range running {
			p.Phases = append(p.Phases, nodecontroller.PhaseChange{Phase: nsv2.PodStatusPhaseRunning, At: at(r)})
		}
		return p
	}
	// One outage, from 10 s to 16 s of the run.
	o := loopOutages{{from: 10 * time.Second, to: 16 * time.Second}}
	outage := func(from, to time.Time) time.Duration { return o.within(from.Sub(t0), to.Sub(t0)) }
	now := at(30)
	for _, tc := range []struct {
		name string
		pod  nodecontroller.Pod
		late bool
	}{
		{"ran 1 s after its binding", pod(1, 2), false},
		{"ran 6 s after its binding, no outage between", pod(1, 7), true},
		{"bound 1 s before the outage, ran 1 s after it", pod(9, 17), false},
		{"bound during the outage, ran 4 s after it", pod(12, 20), false},
		{"bound during the outage, ran 6 s after it", pod(12, 22), true},
		{"bound 3 s before the outage, ran 3 s after it", pod(7, 19), true},
		{"not Running, bound 4 s ago", pod(26), false},
		{"not Running, bound 6 s ago", pod(24), true},
		{"Running twice: the first report counts", pod(1, 2, 20), false},
	} {
		msg := podsRunWherePlaced([]nodecontroller.Pod{tc.pod}, now, runBound, outage)
		assert.Equal(t, tc.late, msg != "", "%s: %s", tc.name, msg)
	}
	assert.NotEmpty(t, podsRunWherePlaced(nil, now, runBound, outage), "no bound pod at all")
}
