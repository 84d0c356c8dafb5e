package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// /status is bounded by the node controller, not by its kubelets: beyond
// its bounds it lists the first nodes and pods, counts them all and says
// what it left out; within them it lists everything and says nothing.
func TestStatusIsBounded(t *testing.T) {
	var nodes []nhv2.NodeHealth
	for i := range statusMaxNodes + 5 {
		nodes = append(nodes, nhv2.NodeHealth{NodeName: fmt.Sprintf("node-%05d", i)})
	}
	var pods []nodecontroller.Pod
	for i := range statusMaxPods + 7 {
		pods = append(pods, nodecontroller.Pod{Namespace: "default", Name: fmt.Sprintf("pod-%05d", i), NodeName: "node-00000"})
	}
	b, err := json.Marshal(boundedStatus(nodes, pods))
	require.NoError(t, err)
	var st struct {
		Nodes     []nhv2.NodeHealth    `json:"nodes"`
		Pods      []nodecontroller.Pod `json:"pods"`
		NodeCount int                  `json:"nodeCount"`
		PodCount  int                  `json:"podCount"`
		Truncated string               `json:"truncated"`
	}
	require.NoError(t, json.Unmarshal(b, &st))
	assert.Len(t, st.Nodes, statusMaxNodes)
	assert.Len(t, st.Pods, statusMaxPods)
	assert.Equal(t, statusMaxNodes+5, st.NodeCount)
	assert.Equal(t, statusMaxPods+7, st.PodCount)
	assert.Contains(t, st.Truncated, fmt.Sprintf("%d of %d nodes", statusMaxNodes, statusMaxNodes+5))
	assert.Contains(t, st.Truncated, fmt.Sprintf("%d of %d pods", statusMaxPods, statusMaxPods+7))

	whole := boundedStatus(nodes[:3], pods[:2])
	assert.Len(t, whole["nodes"], 3)
	assert.Len(t, whole["pods"], 2)
	assert.NotContains(t, whole, "truncated")
}
