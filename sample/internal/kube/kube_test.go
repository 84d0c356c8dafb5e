package kube

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestPodRequestsSumContainers(t *testing.T) {
	p, err := DecodePod(json.RawMessage(`{"metadata":{"name":"web","namespace":"shop","uid":"u1"},
		"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"250m","memory":"128Mi"}}},
		{"name":"b","resources":{"requests":{"cpu":"1"}}},{"name":"c"}]},"status":{"phase":"Pending"}}`))
	require.NoError(t, err)
	cpu, mem := Requests(p)
	assert.Equal(t, int64(1250), cpu)
	assert.Equal(t, int64(128<<20), mem)
	assert.Equal(t, "shop", p.Namespace)

	tol := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	back, err := json.Marshal(NewPod(p.ObjectMeta, 1250, 128<<20, tol))
	require.NoError(t, err)
	again, err := DecodePod(back)
	require.NoError(t, err)
	cpu, mem = Requests(again)
	assert.Equal(t, []int64{1250, 128 << 20}, []int64{cpu, mem})
	assert.Equal(t, tol, again.Spec.Tolerations)

	_, err = DecodePod(json.RawMessage(`{"metadata":{"name":"x"},"spec":{"containers":[{"name":"x","resources":{"requests":{"cpu":"lots"}}}]}}`))
	assert.ErrorContains(t, err, "pod: quantities must match")
}

func TestKeepNodesKeepsTheObjectsAsSent(t *testing.T) {
	raw := json.RawMessage(`{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[
		{"metadata":{"name":"n1","labels":{"zone":"a"}},"status":{"capacity":{"cpu":"4"}}},
		{"metadata":{"name":"n2"}},{"metadata":{"name":"n3"},"spec":{"unschedulable":true}}]}`)
	l, err := DecodeNodeList(raw)
	require.NoError(t, err)
	assert.Equal(t, []string{"n1", "n2", "n3"}, Names(l))
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
