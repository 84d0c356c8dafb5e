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
			Allocatable: v2.NodeHealthAllocatable{CPUMillis: 3500, MemoryBytes: 8 << 30, Pods: 110}}
		down, err := v2.NodeHealthToV1(in)
		require.NoError(t, err)
		assert.Equal(t, tc.ready, down.Ready)
		assert.Equal(t, map[string]string{"cpu": "3500m", "memory": "8Gi", "pods": "110"}, down.Allocatable)
		up, err := v2.NodeHealthFromV1(down)
		require.NoError(t, err)
		assert.Equal(t, tc.stateUp, up.State)
		assert.Equal(t, in.Allocatable, up.Allocatable)
		assert.Equal(t, &lost, up.Reason)
	}
	_, err := v2.NodeHealthFromV1(&v1.NodeHealth{NodeName: "n", Allocatable: map[string]string{"cpu": "a lot"}})
	assert.ErrorContains(t, err, "allocatable cpu")
}
