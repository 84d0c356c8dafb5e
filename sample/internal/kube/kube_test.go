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

// A pod's request of a resource is, as kube-scheduler counts it, the
// larger of its containers' sum and its largest init container's: a pod
// whose GPU memory is asked by an init container alone still asks for it
// (and interests the extender that manages it).
func TestOtherRequestsCountInitContainersAsKubeSchedulerDoes(t *testing.T) {
	p, err := DecodePod(json.RawMessage(`{"metadata":{"name":"w","namespace":"n","uid":"u"},"spec":{
		"initContainers":[
			{"name":"i1","resources":{"limits":{"aliyun.com/gpu-mem":"8"}}},
			{"name":"i2","resources":{"requests":{"example.com/foo":"1","example.com/bar":"5","cpu":"4"}}}],
		"containers":[
			{"name":"a","resources":{"requests":{"example.com/foo":"2","example.com/bar":"1"}}},
			{"name":"b","resources":{"requests":{"example.com/foo":"1","example.com/bar":"1"}}}]},
		"status":{"phase":"Pending"}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{
		"aliyun.com/gpu-mem": 8, // an init container's alone
		"example.com/foo":    3, // the containers' sum, over the init container's 1
		"example.com/bar":    5, // the init container's, over the containers' sum of 2
	}, OtherRequests(p))
}
