package v2_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	v1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	v2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

func ptr[T any](v T) *T { return &v }

func TestNodeStatusRoundTripsThroughV1(t *testing.T) {
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	in := &v2.NodeStatus{
		NodeName: "node-7", KubeletVersion: ptr("1.31.0"), Unschedulable: ptr(true),
		Conditions: v2.Conditions{
			Ready:        v2.Condition{Status: v2.ConditionStatusTrue, Reason: ptr("KubeletReady"), Since: &since},
			DiskPressure: &v2.Condition{Status: v2.ConditionStatusFalse},
		},
		Capacity:    v2.Resources{CPUMillis: 4000, MemoryBytes: 16 << 30, Pods: 110},
		Allocatable: v2.Resources{CPUMillis: 3500, MemoryBytes: 15 << 30, Pods: 110},
	}
	down, err := v2.NodeStatusToV1(in)
	require.NoError(t, err)
	b, err := json.Marshal(down)
	require.NoError(t, err)
	require.NoError(t, v1.Contract.ValidateJSON("NodeStatus", b), "the converted status is valid 1.0.0")
	assert.Equal(t, v1.ResourceList{"cpu": "3500m", "memory": "15Gi", "pods": "110"}, down.Allocatable)
	require.Len(t, down.Conditions, 2)
	assert.Equal(t, v1.NodeConditionTypeReady, down.Conditions[0].Type)
	assert.Equal(t, v1.NodeConditionTypeDiskPressure, down.Conditions[1].Type)

	up, err := v2.NodeStatusFromV1(down)
	require.NoError(t, err)
	assert.Equal(t, in, up)
}

func TestNodeStatusFromV1(t *testing.T) {
	for _, tc := range []struct {
		name  string        // what the case shows
		in    v1.NodeStatus // the 1.0.0 status
		ready v2.ConditionStatus
		cpu   int64  // capacity cpuMillis up
		code  string // the error code, if the conversion fails
	}{
		{name: "no ready condition is unknown", in: v1.NodeStatus{NodeName: "n", Capacity: v1.ResourceList{"cpu": "2"}},
			ready: v2.ConditionStatusUnknown, cpu: 2000},
		{name: "other resources are dropped", in: v1.NodeStatus{NodeName: "n", Capacity: v1.ResourceList{"cpu": "250m", "nvidia.com/gpu": "1"},
			Conditions: []v1.NodeCondition{{Type: v1.NodeConditionTypeReady, Status: v1.NodeConditionStatusFalse}}},
			ready: v2.ConditionStatusFalse, cpu: 250},
		{name: "a quantity too large is invalid", in: v1.NodeStatus{NodeName: "n", Capacity: v1.ResourceList{"memory": "99999999Ti"}},
			code: "invalid_argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, err := v2.NodeStatusFromV1(&tc.in)
			if tc.code != "" {
				assert.Equal(t, framework.Code(tc.code), framework.CodeOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ready, up.Conditions.Ready.Status)
			assert.Equal(t, tc.cpu, up.Capacity.CPUMillis)
		})
	}
}

func TestPodStatusAndAckConvertBothWays(t *testing.T) {
	in := &v2.PodStatus{NodeName: "n", Namespace: "default", Name: "web", UID: "u1", Phase: v2.PodStatusPhaseRunning, Ready: ptr(true), RestartCount: ptr(int64(2))}
	down, err := v2.PodStatusToV1(in)
	require.NoError(t, err)
	up, err := v2.PodStatusFromV1(down)
	require.NoError(t, err)
	assert.Equal(t, in, up)
	ack, err := v2.AckFromV1(&v1.Ack{Accepted: true})
	require.NoError(t, err)
	back, err := v2.AckToV1(ack)
	require.NoError(t, err)
	assert.True(t, back.Accepted)
}
