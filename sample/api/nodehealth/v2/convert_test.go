package v2_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	v2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
)

func TestNodeHealthConversions(t *testing.T) {
	lost := "NodeLost"
	for _, tc := range []struct {
		state   v2.NodeHealthState // the 2.0.0 state
		ready   bool               // ready down
		stateUp v2.NodeHealthState // the state back up
	}{
		{v2.NodeHealthStateReady, true, v2.NodeHealthStateReady},
		{v2.NodeHealthStateNotReady, false, v2.NodeHealthStateNotReady},
		{v2.NodeHealthStateUnknown, false, v2.NodeHealthStateNotReady},
	} {
		in := &v2.NodeHealth{NodeName: "n1", State: tc.state, Schedulable: true, Reason: &lost,
			Allocatable: v2.Resources{CPUMillis: 3500, MemoryBytes: 8 << 30, Pods: 110}}
		down, err := v2.NodeHealthToV1(in)
		require.NoError(t, err)
		assert.Equal(t, tc.ready, down.Ready)
		assert.Equal(t, v1.ResourceList{"cpu": "3500m", "memory": "8Gi", "pods": "110"}, down.Allocatable)
		up, err := v2.NodeHealthFromV1(down)
		require.NoError(t, err)
		assert.Equal(t, tc.stateUp, up.State)
		assert.Equal(t, in.Allocatable, up.Allocatable)
		assert.Equal(t, &lost, up.Reason)
	}
	_, err := v2.NodeHealthFromV1(&v1.NodeHealth{NodeName: "n", Allocatable: map[string]string{"cpu": "a lot"}})
	assert.ErrorContains(t, err, "allocatable cpu")
}

// TestNodeHealthDescriptionSurvivesARoundTrip: what the scheduler makes a
// node's object of travels through 1.0.0 unchanged.
func TestNodeHealthDescriptionSurvivesARoundTrip(t *testing.T) {
	gpu, why := "gpu", "KubeletReady"
	in := &v2.NodeHealth{NodeName: "n1", State: v2.NodeHealthStateReady, Schedulable: true,
		Allocatable: v2.Resources{CPUMillis: 3500, MemoryBytes: 8 << 30, Pods: 107},
		Capacity:    &v2.Resources{CPUMillis: 4000, MemoryBytes: 16 << 30, Pods: 110},
		Labels:      map[string]string{"kubernetes.io/hostname": "n1", "zone": "a"},
		Taints:      []v2.Taint{{Key: "dedicated", Value: &gpu, Effect: v2.TaintEffectNoSchedule}, {Key: "spot", Effect: v2.TaintEffectPreferNoSchedule}},
		Addresses:   []v2.NodeAddress{{Type: v2.NodeAddressTypeHostname, Address: "n1"}, {Type: v2.NodeAddressTypeInternalIP, Address: "127.0.0.1"}},
		Conditions:  []v2.NodeCondition{{Type: v2.NodeConditionTypeReady, Status: v2.NodeConditionStatusTrue, Reason: &why}},
		Pods: []v2.BoundPod{{Pod: v2.PodRef{Namespace: "default", Name: "p1", UID: "u1"}, Priority: 1000,
			Requests: v2.PodRequests{CPUMillis: 250, MemoryBytes: 64 << 20}}},
	}
	down, err := v2.NodeHealthToV1(in)
	require.NoError(t, err)
	assert.Equal(t, v1.ResourceList{"cpu": "4", "memory": "16Gi", "pods": "110"}, *down.Capacity)
	up, err := v2.NodeHealthFromV1(down)
	require.NoError(t, err)
	assert.Equal(t, in, up)
}

// TestEvictionSurvivesARoundTrip: an eviction and a binding's priority
// travel through 1.0.0 unchanged.
func TestEvictionSurvivesARoundTrip(t *testing.T) {
	in := &v2.Eviction{NodeName: "n1",
		Victims:   []v2.PodRef{{Namespace: "default", Name: "low-1", UID: "u1"}, {Namespace: "default", Name: "low-2", UID: "u2"}},
		Preemptor: v2.Preemptor{Pod: v2.PodRef{Namespace: "default", Name: "high", UID: "u3"}, Priority: 10000, Requests: v2.PodRequests{CPUMillis: 1500, MemoryBytes: 1 << 30}}}
	down, err := v2.EvictionToV1(in)
	require.NoError(t, err)
	assert.Equal(t, v1.BoundPod{Namespace: "default", Name: "high", UID: "u3", Priority: 10000, Requests: v1.ResourceList{"cpu": "1500m", "memory": "1Gi"}}, down.Preemptor)
	up, err := v2.EvictionFromV1(down)
	require.NoError(t, err)
	assert.Equal(t, in, up)

	res, err := v2.EvictResultFromV1(&v1.EvictResult{Evicted: []string{"u1"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"u1"}, res.Evicted)

	prio := int64(100)
	b := &v2.Binding{Pod: v2.PodRef{Namespace: "default", Name: "p", UID: "u"}, NodeName: "n1", Priority: &prio,
		Requests: v2.PodRequests{CPUMillis: 100, MemoryBytes: 1 << 20}}
	bdown, err := v2.BindingToV1(b)
	require.NoError(t, err)
	bup, err := v2.BindingFromV1(bdown)
	require.NoError(t, err)
	assert.Equal(t, b, bup)

	_, err = v2.EvictionFromV1(&v1.Eviction{NodeName: "n", Victims: []v1.PodName{{Namespace: "d", Name: "v", UID: "u"}},
		Preemptor: v1.BoundPod{Namespace: "d", Name: "p", UID: "p", Requests: v1.ResourceList{"cpu": "lots"}}})
	assert.ErrorContains(t, err, "requests cpu")
}
