package kube

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPodRequestsSumContainers(t *testing.T) {
	p, err := DecodePod(json.RawMessage(`{"metadata":{"name":"web","namespace":"shop","uid":"u1"},
		"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"250m","memory":"128Mi"}}},
		{"name":"b","resources":{"requests":{"cpu":"1"}}},{"name":"c"}]},"status":{"phase":"Pending"}}`))
	require.NoError(t, err)
	cpu, mem, err := p.Requests()
	require.NoError(t, err)
	assert.Equal(t, int64(1250), cpu)
	assert.Equal(t, int64(128<<20), mem)
	assert.Equal(t, "shop", p.Metadata.Namespace)

	back, err := json.Marshal(NewPod(p.Metadata, 1250, 128<<20))
	require.NoError(t, err)
	again, err := DecodePod(back)
	require.NoError(t, err)
	cpu, mem, err = again.Requests()
	require.NoError(t, err)
	assert.Equal(t, []int64{1250, 128 << 20}, []int64{cpu, mem})

	_, _, err = (&Pod{Spec: PodSpec{Containers: []Container{{Name: "x",
		Resources: ResourceRequirements{Requests: map[string]string{"cpu": "lots"}}}}}}).Requests()
	assert.ErrorContains(t, err, "container x: cpu request")
}

func TestKeepNodesKeepsTheObjectsAsSent(t *testing.T) {
	raw := json.RawMessage(`{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[
		{"metadata":{"name":"n1","labels":{"zone":"a"}},"status":{"capacity":{"cpu":"4"}}},
		{"metadata":{"name":"n2"}},{"metadata":{"name":"n3"},"spec":{"unschedulable":true}}]}`)
	l, err := DecodeNodeList(raw)
	require.NoError(t, err)
	assert.Equal(t, []string{"n1", "n2", "n3"}, l.Names())
	assert.True(t, l.Items[2].Spec.Unschedulable)

	kept, err := KeepNodes(raw, func(name string) bool { return name != "n2" })
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[
		{"metadata":{"name":"n1","labels":{"zone":"a"}},"status":{"capacity":{"cpu":"4"}}},
		{"metadata":{"name":"n3"},"spec":{"unschedulable":true}}]}`, string(kept))

	none, err := DecodeNodeList(json.RawMessage(`null`))
	require.NoError(t, err)
	assert.Nil(t, none)
}
