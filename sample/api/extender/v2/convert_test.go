package v2_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
	v1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	v2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kube"
)

func ptr[T any](v T) *T { return &v }

var pod = v2.PodRef{Namespace: "shop", Name: "web-1", UID: "u-1", Labels: map[string]string{"app": "web"},
	Requests: v2.Requests{CPUMillis: 250, MemoryBytes: 128 << 20}}

func TestFilterRoundTripsThroughV1(t *testing.T) {
	req := &v2.FilterRequest{Pod: pod, Nodes: []string{"n1", "n2", "n3"}}
	args, err := v2.FilterRequestToV1(req)
	require.NoError(t, err)
	b, err := json.Marshal(args)
	require.NoError(t, err)
	require.NoError(t, v1.Contract.ValidateJSON("ExtenderArgs", b))
	assert.Contains(t, string(b), `"NodeNames":["n1","n2","n3"]`, "Go field names on the wire")
	back, err := v2.FilterRequestFromV1(args)
	require.NoError(t, err)
	assert.Equal(t, req, back)

	resp := &v2.FilterResponse{Feasible: []string{"n1"}, Failed: []v2.NodeFailure{
		{Node: "n2", Reason: v2.NodeFailureReasonMaintenance, Message: ptr("node is in a maintenance window")},
		{Node: "n3", Reason: v2.NodeFailureReasonUnschedulable, Unresolvable: ptr(true)},
	}}
	result, err := v2.FilterResponseToV1(resp)
	require.NoError(t, err)
	failed, _ := result.FailedNodes.Get()
	assert.Equal(t, v1.FailedNodesMap{"n2": "Maintenance: node is in a maintenance window"}, failed)
	unresolvable, _ := result.FailedAndUnresolvableNodes.Get()
	assert.Equal(t, v1.FailedNodesMap{"n3": "Unschedulable"}, unresolvable)
	up, err := v2.FilterResponseFromV1(result)
	require.NoError(t, err)
	assert.Equal(t, resp, up)
}

func TestFilterResponseFromV1(t *testing.T) {
	for _, tc := range []struct {
		name     string // what the case shows
		in       string // a Kubernetes extender's answer
		feasible []string
		failed   []v2.NodeFailure
		code     framework.Code // the error code, if any
	}{
		{name: "node names", in: `{"NodeNames":["a"],"FailedNodes":{"b":"no GPU"},"Error":""}`,
			feasible: []string{"a"}, failed: []v2.NodeFailure{{Node: "b", Reason: v2.NodeFailureReasonOther, Message: ptr("no GPU")}}},
		{name: "whole nodes, lower-case keys", in: `{"nodes":{"items":[{"metadata":{"name":"a"}}]},"failedNodes":null}`,
			feasible: []string{"a"}},
		{name: "nothing feasible", in: `{}`, feasible: []string{}},
		{name: "an error fails the call", in: `{"Error":"cache not synced"}`, code: framework.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r v1.ExtenderFilterResult
			require.NoError(t, json.Unmarshal([]byte(tc.in), &r))
			up, err := v2.FilterResponseFromV1(&r)
			if tc.code != "" {
				assert.Equal(t, tc.code, framework.CodeOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.feasible, up.Feasible)
			assert.Equal(t, tc.failed, up.Failed)
		})
	}
}

// TestFilterResponseFromV1NodesReadsNodesOnly: the answer to a request
// that carried whole nodes is read from Nodes, whatever NodeNames holds
// (Telemetry Aware Scheduling's trailing empty name here).
func TestFilterResponseFromV1NodesReadsNodesOnly(t *testing.T) {
	var r v1.ExtenderFilterResult
	require.NoError(t, json.Unmarshal([]byte(`{"Nodes":{"items":[{"metadata":{"name":"a"}}]},"NodeNames":["a",""]}`), &r))
	up, err := v2.FilterResponseFromV1Nodes(&r)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, up.Feasible)
	up, err = v2.FilterResponseFromV1(&r)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", ""}, up.Feasible, "an answer to names is read from NodeNames")
}

func TestNodeNamesFromV1PrefersNodeNames(t *testing.T) {
	args := &v1.ExtenderArgs{NodeNames: jsonwire.Value([]string{"x"}), Nodes: v1.NodeList(`{"items":[{"metadata":{"name":"y"}}]}`)}
	names, err := v2.NodeNamesFromV1(args)
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, names)
	args.NodeNames = jsonwire.Null[[]string]()
	names, err = v2.NodeNamesFromV1(args)
	require.NoError(t, err)
	assert.Equal(t, []string{"y"}, names)
}

func TestPrioritizeScalesScores(t *testing.T) {
	down, err := v2.PrioritizeResponseToV1(&v2.PrioritizeResponse{Scores: []v2.NodeScore{{Node: "a", Score: 1}, {Node: "b", Score: 0.44}, {Node: "c", Score: 0.45}}})
	require.NoError(t, err)
	assert.Equal(t, v1.HostPriorityList{{Host: "a", Score: 10}, {Host: "b", Score: 4}, {Host: "c", Score: 5}}, *down)
	up, err := v2.PrioritizeResponseFromV1(down)
	require.NoError(t, err)
	assert.Equal(t, []v2.NodeScore{{Node: "a", Score: 1}, {Node: "b", Score: 0.4}, {Node: "c", Score: 0.5}}, up.Scores)
	req, err := v2.PrioritizeRequestToV1(&v2.PrioritizeRequest{Pod: pod, Nodes: []string{"a"}})
	require.NoError(t, err)
	back, err := v2.PrioritizeRequestFromV1(req)
	require.NoError(t, err)
	assert.Equal(t, pod, back.Pod)
}

// TestPodAnnotationsAndExtendedResourcesRoundTripThroughV1: a pod's
// annotations and its requests of resources other than CPU and memory go
// down into the core/v1 Pod as the API server stores them (an extended
// resource's limit equal to its request, which gpushare-scheduler-extender
// reads; ephemeral-storage's request alone) and come back up; a limit
// without a request counts as the request.
func TestPodAnnotationsAndExtendedResourcesRoundTripThroughV1(t *testing.T) {
	gpu := pod
	gpu.Annotations = map[string]string{"capacity.topolvm.io/ssd": "1073741824"}
	gpu.Requests.Extended = map[string]int64{"nvidia.com/gpu": 2, "topolvm.io/capacity": 1, "ephemeral-storage": 1 << 30, "hugepages-2Mi": 4 << 20}
	raw, err := v2.PodRefToV1(gpu)
	require.NoError(t, err)
	core, err := kube.DecodePod(json.RawMessage(raw))
	require.NoError(t, err)
	assert.Equal(t, gpu.Annotations, core.Annotations)
	res := core.Spec.Containers[0].Resources
	for name, want := range gpu.Requests.Extended {
		q := res.Requests[corev1.ResourceName(name)]
		assert.Equal(t, want, q.Value(), name)
	}
	assert.ElementsMatch(t, []corev1.ResourceName{"nvidia.com/gpu", "topolvm.io/capacity", "hugepages-2Mi"}, slices.Collect(maps.Keys(res.Limits)))
	back, err := v2.PodRefFromV1(raw)
	require.NoError(t, err)
	assert.Equal(t, gpu, back)

	core.Spec.Containers = append(core.Spec.Containers, corev1.Container{Name: "sidecar", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1")}}})
	b, err := json.Marshal(core)
	require.NoError(t, err)
	back, err = v2.PodRefFromV1(v1.Pod(b))
	require.NoError(t, err)
	assert.Equal(t, int64(3), back.Requests.Extended["nvidia.com/gpu"], "the sidecar's limit counts as its request")
	assert.Equal(t, gpu.Requests.CPUMillis, back.Requests.CPUMillis, "a CPU limit is no request")
}

// TestPrioritizeTakesScoresOutsideMaxExtenderPriority: kube-scheduler
// takes any int64 score, scaled but never clamped, so 1.0.0 takes it (the
// reference validator and the generated one) and it goes up scaled alike.
func TestPrioritizeTakesScoresOutsideMaxExtenderPriority(t *testing.T) {
	raw := []byte(`[{"Host":"a","Score":100},{"Host":"b","Score":55},{"Host":"c","Score":-5}]`)
	require.NoError(t, v1.Contract.ValidateJSON("HostPriorityList", raw))
	var list v1.HostPriorityList
	require.NoError(t, json.Unmarshal(raw, &list))
	require.NoError(t, list.Validate())
	up, err := v2.PrioritizeResponseFromV1(&list)
	require.NoError(t, err)
	assert.Equal(t, []v2.NodeScore{{Node: "a", Score: 10}, {Node: "b", Score: 5.5}, {Node: "c", Score: -0.5}}, up.Scores)
}

func TestBindConversions(t *testing.T) {
	args, err := v2.BindRequestToV1(&v2.BindRequest{Pod: pod, Node: "n1"})
	require.NoError(t, err)
	assert.Equal(t, &v1.ExtenderBindingArgs{PodName: "web-1", PodNamespace: "shop", PodUID: "u-1", Node: "n1"}, args)
	up, err := v2.BindRequestFromV1(args)
	require.NoError(t, err)
	assert.Equal(t, "n1", up.Node)
	assert.Equal(t, "u-1", up.Pod.UID)

	_, err = v2.BindResponseFromV1(&v1.ExtenderBindingResult{Error: ptr("pod already bound to n2")})
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(err))
	ok, err := v2.BindResponseFromV1(&v1.ExtenderBindingResult{Error: ptr("")})
	require.NoError(t, err)
	assert.NotNil(t, ok)
}
