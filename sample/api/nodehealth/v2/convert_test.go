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
	}
	down, err := v2.NodeHealthToV1(in)
	require.NoError(t, err)
	assert.Equal(t, v1.ResourceList{"cpu": "4", "memory": "16Gi", "pods": "110"}, *down.Capacity)
	up, err := v2.NodeHealthFromV1(down)
	require.NoError(t, err)
	assert.Equal(t, in, up)
}
