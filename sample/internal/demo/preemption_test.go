package demo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// The eviction invariant breaks for a victim whose priority is not below
// the preemptor's, an eviction that left too little room, a preemptor
// bound to another node, and one never bound (at the end, or past the
// bound while the run goes on); an evicted pod that never ran does not
// break the loop's own invariant.
func TestEvictionsInvariantCatchesEvictionsThatMadeNoRoom(t *testing.T) {
	clock := time.Now()
	eviction := func(victimPriority int64, leftCPU int64) nodecontroller.Eviction {
		return nodecontroller.Eviction{Node: "node-001", At: clock,
			Victims:   []nodecontroller.Pod{{Namespace: "default", Name: "low", UID: "low", NodeName: "node-001", Priority: victimPriority}},
			Preemptor: nhv2.Preemptor{Pod: nhv2.PodRef{Namespace: "default", Name: "high", UID: "high"}, Priority: 1000, Requests: nhv2.PodRequests{CPUMillis: 500, MemoryBytes: 1 << 20}},
			After:     nhv2.Resources{CPUMillis: leftCPU, MemoryBytes: 1 << 30, Pods: 10}}
	}
	loop := func(e nodecontroller.Eviction) *podLoop {
		l := newPodLoop(time.Second)
		l.now = func() time.Time { return clock }
		l.bound(extv2.PodRef{UID: "low"}, "node-001")
		l.evicted(e)
		return l
	}

	good := loop(eviction(100, 600))
	assert.NoError(t, good.checkEvictions(false), "the preemptor may still be bound")
	assert.ErrorContains(t, good.checkEvictions(true), "which was not bound there")
	good.observe("high", &nodecontroller.Pod{UID: "high", NodeName: "node-001"})
	assert.NoError(t, good.checkEvictions(true), "the store holds it bound there")
	good.bound(extv2.PodRef{UID: "high"}, "node-001")
	assert.NoError(t, good.checkEvictions(true), "and the scheduler bound it there")
	assert.NoError(t, good.preempted())
	assert.NoError(t, good.check(false), "the victim never ran: it was evicted")
	assert.ErrorContains(t, good.check(true), "high", "the preemptor must run")

	equal := loop(eviction(1000, 600))
	equal.observe("high", &nodecontroller.Pod{UID: "high", NodeName: "node-001"})
	assert.ErrorContains(t, equal.checkEvictions(false), "is not higher")

	noRoom := loop(eviction(100, 400))
	noRoom.observe("high", &nodecontroller.Pod{UID: "high", NodeName: "node-001"})
	assert.ErrorContains(t, noRoom.checkEvictions(false), "which does not fit")

	elsewhere := loop(eviction(100, 600))
	elsewhere.observe("high", &nodecontroller.Pod{UID: "high", NodeName: "node-002"})
	assert.ErrorContains(t, elsewhere.checkEvictions(false), "which was then bound to node-002")
	schedulerElsewhere := loop(eviction(100, 600))
	schedulerElsewhere.observe("high", &nodecontroller.Pod{UID: "high", NodeName: "node-001"})
	schedulerElsewhere.bound(extv2.PodRef{UID: "high"}, "node-002")
	assert.ErrorContains(t, schedulerElsewhere.checkEvictions(false), "which the scheduler then bound to node-002")

	late := loop(eviction(100, 600))
	clock = clock.Add(time.Second + time.Millisecond)
	assert.ErrorContains(t, late.checkEvictions(false), "which was not bound there", "past the bound")

	none := newPodLoop(time.Second)
	assert.ErrorContains(t, none.preempted(), "no pod was placed by preemption")
}
