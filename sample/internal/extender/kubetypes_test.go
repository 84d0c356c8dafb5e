package extender_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// TestPlainServingTakesKubeSchedulerTypes posts what a kube-scheduler
// sends, encoded by encoding/json from k8s.io/kube-scheduler/extender/v1's
// types, with Go field names and all lower-case (the two spellings
// kube-scheduler's own types_test.go uses), to the extender's plain
// serving, and reads the answers with those types: both spellings get the
// same answer.
func TestPlainServingTakesKubeSchedulerTypes(t *testing.T) {
	srv := plainExtender(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "u-9"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("67108864")}}}}}}
	nodes := &corev1.NodeList{Items: []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "node-001", Labels: map[string]string{"zone": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-002"}, Spec: corev1.NodeSpec{Unschedulable: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-003"}}}}
	for _, tc := range []struct {
		name, path string
		args       any
		answer     func() any // a new value of the answer's type
		check      func(t *testing.T, answer any)
	}{
		{"filter whole nodes", "/filter", &extenderv1.ExtenderArgs{Pod: pod, Nodes: nodes},
			func() any { return &extenderv1.ExtenderFilterResult{} }, func(t *testing.T, a any) {
				r := a.(*extenderv1.ExtenderFilterResult)
				require.NotNil(t, r.Nodes)
				require.Len(t, r.Nodes.Items, 1)
				assert.Equal(t, "node-001", r.Nodes.Items[0].Name)
				assert.Equal(t, "a", r.Nodes.Items[0].Labels["zone"])
				assert.Equal(t, extenderv1.FailedNodesMap{"node-003": "maintenance: node is in a maintenance window"}, lower(r.FailedNodes))
				assert.Contains(t, r.FailedAndUnresolvableNodes, "node-002")
			}},
		{"filter by name", "/filter", &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &[]string{"node-001", "node-003"}},
			func() any { return &extenderv1.ExtenderFilterResult{} }, func(t *testing.T, a any) {
				r := a.(*extenderv1.ExtenderFilterResult)
				require.NotNil(t, r.NodeNames)
				assert.Equal(t, []string{"node-001"}, *r.NodeNames)
				assert.Nil(t, r.Nodes)
			}},
		{"prioritize", "/prioritize", &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &[]string{"node-001", "node-003"}},
			func() any { return &extenderv1.HostPriorityList{} }, func(t *testing.T, a any) {
				assert.Equal(t, &extenderv1.HostPriorityList{{Host: "node-001", Score: 10}, {Host: "node-003", Score: 10}}, a)
			}},
		{"preemption, whole victims", "/preempt", &extenderv1.ExtenderPreemptionArgs{Pod: pod, NodeNameToVictims: map[string]*extenderv1.Victims{
			"node-001": {Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "low", UID: "u-1"}}}, NumPDBViolations: 1},
			"node-003": {Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "low2", UID: "u-3"}}}}}},
			func() any { return &extenderv1.ExtenderPreemptionResult{} }, func(t *testing.T, a any) {
				assert.Equal(t, &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
					"node-001": {Pods: []*extenderv1.MetaPod{{UID: "u-1"}}, NumPDBViolations: 1}}}, a, "node-003 is in maintenance")
			}},
		{"preemption, victims by UID", "/preempt", &extenderv1.ExtenderPreemptionArgs{Pod: pod, NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"node-001": {Pods: []*extenderv1.MetaPod{{UID: "u-1"}}}, "node-003": {Pods: []*extenderv1.MetaPod{{UID: "u-3"}}}}},
			func() any { return &extenderv1.ExtenderPreemptionResult{} }, func(t *testing.T, a any) {
				assert.Equal(t, &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
					"node-001": {Pods: []*extenderv1.MetaPod{{UID: "u-1"}}}}}, a)
			}},
		{"bind", "/bind", &extenderv1.ExtenderBindingArgs{PodName: "web-1", PodNamespace: "shop", PodUID: "u-9", Node: "node-001"},
			func() any { return &extenderv1.ExtenderBindingResult{} }, func(t *testing.T, a any) {
				assert.Equal(t, &extenderv1.ExtenderBindingResult{}, a)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.args)
			require.NoError(t, err)
			var answers []any
			for _, body := range []string{string(b), strings.ToLower(string(b))} {
				status, out := post(t, srv.URL+"/scheduler"+tc.path, body)
				require.Equal(t, http.StatusOK, status, "%s → %s", body, out)
				a := tc.answer()
				require.NoError(t, json.Unmarshal([]byte(out), a))
				tc.check(t, a)
				answers = append(answers, a)
			}
			assert.Equal(t, answers[0], answers[1], "both spellings get the same answer")
		})
	}
}

// lower lower-cases failure texts: a lower-cased request carries a
// lower-cased pod, not different failures.
func lower(m extenderv1.FailedNodesMap) extenderv1.FailedNodesMap {
	out := extenderv1.FailedNodesMap{}
	for k, v := range m {
		out[k] = strings.ToLower(v)
	}
	return out
}
