package demo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// running is a pod as the store holds it once its kubelet reported it
// Running on node.
func running(node string) *nodecontroller.Pod {
	return &nodecontroller.Pod{NodeName: node, Phase: nsv2.PodStatusPhaseRunning}
}

// The loop's invariant breaks for a pod reported Running (or ended) on
// another node than the one it was placed on, one that ran later than the
// bound, and, at the end, one that never ran; a pod reported ended where
// it was placed ran.
func TestPodLoopCatchesPodsThatDidNotRunWherePlaced(t *testing.T) {
	l := newPodLoop(time.Hour)
	l.bound(extv2.PodRef{UID: "a"}, "node-000")
	assert.NoError(t, l.check(false), "a may still start")
	assert.ErrorContains(t, l.check(true), "1 not yet", "a never ran")
	l.observe("a", &nodecontroller.Pod{NodeName: "node-000", Phase: nsv2.PodStatusPhasePending})
	assert.Error(t, l.check(true), "Pending is not Running")
	l.observe("a", running("node-000"))
	assert.NoError(t, l.check(true))
	l.bound(extv2.PodRef{UID: "z"}, "node-000")
	assert.NoError(t, l.check(true), "a pod placed after the final check, while the run is torn down, is not followed")
	l.closed = false

	// A pod that ended before its Running was reported ran: its kubelet
	// reported its latest phase, Succeeded, and the store let it go.
	l.bound(extv2.PodRef{UID: "e"}, "node-000")
	l.observe("e", &nodecontroller.Pod{NodeName: "node-000", Phase: nsv2.PodStatusPhasePending})
	l.observe("e", &nodecontroller.Pod{NodeName: "node-000", Phase: nsv2.PodStatusPhaseSucceeded})
	assert.NoError(t, l.check(true), "a pod reported ended where it was placed")
	l.closed = false

	l.bound(extv2.PodRef{UID: "b"}, "node-001")
	l.observe("b", running("node-002"))
	assert.ErrorContains(t, l.check(false), "placed on node-001 but reported Running or ended on node-002")
	l.bound(extv2.PodRef{UID: "f"}, "node-001")
	l.observe("f", &nodecontroller.Pod{NodeName: "node-002", Phase: nsv2.PodStatusPhaseFailed})
	delete(l.placed, "b")
	assert.ErrorContains(t, l.check(false), "pod f was placed on node-001 but reported Running or ended on node-002")

	late := newPodLoop(time.Second)
	clock := time.Now()
	late.now = func() time.Time { return clock }
	late.bound(extv2.PodRef{UID: "c"}, "node-000")
	clock = clock.Add(time.Second)
	assert.NoError(t, late.check(false), "at the bound")
	clock = clock.Add(time.Millisecond)
	assert.ErrorContains(t, late.check(false), "1 not yet")
	late.observe("c", running("node-000"))
	assert.ErrorContains(t, late.check(false), "1 pod(s) ran later than")

	// While the kubelet has a node without a compatible node controller
	// (an outage), a pod's wait does not count; before and after it does.
	out := newPodLoop(time.Second)
	clock = out.origin
	out.now = func() time.Time { return clock }
	out.bound(extv2.PodRef{UID: "d"}, "node-000")
	clock = clock.Add(500 * time.Millisecond)
	out.kubelet(false)
	clock = clock.Add(10 * time.Second)
	assert.NoError(t, out.check(false), "an outage of 10s, 500ms waited besides it")
	out.kubelet(true)
	clock = clock.Add(400 * time.Millisecond)
	out.kubelet(true)
	assert.NoError(t, out.check(false), "900ms waited besides the outage")
	clock = clock.Add(200 * time.Millisecond)
	assert.ErrorContains(t, out.check(false), "placed on node-000 11.1s ago (1.1s besides outages), is not reported Running or ended")
	out.observe("d", running("node-000"))
	assert.ErrorContains(t, out.check(false), "1 pod(s) ran later than 1s after they were placed, besides the kubelet's outages")
}

// ranSince holds only for a pod placed after the condition was first
// asked and then reported Running on the node it was placed on.
func TestRanSinceWantsAPodPlacedAfterItAndRunWherePlaced(t *testing.T) {
	l := newPodLoop(time.Hour)
	clock := l.origin
	l.now = func() time.Time { return clock }
	l.bound(extv2.PodRef{UID: "before"}, "node-000")
	clock = clock.Add(time.Millisecond)
	cond := l.ranSince()
	assert.Error(t, cond.Holds(nil), "nothing placed since")
	l.observe("before", running("node-000"))
	assert.Error(t, cond.Holds(nil), "a pod placed before the step began does not count")

	clock = clock.Add(time.Millisecond)
	l.bound(extv2.PodRef{UID: "elsewhere"}, "node-001")
	l.observe("elsewhere", running("node-002"))
	assert.Error(t, cond.Holds(nil), "a pod Running on another node than its own does not count")
	l.bound(extv2.PodRef{UID: "after"}, "node-001")
	assert.Error(t, cond.Holds(nil), "placed, not yet Running")
	l.observe("after", running("node-001"))
	assert.NoError(t, cond.Holds(nil))
}
