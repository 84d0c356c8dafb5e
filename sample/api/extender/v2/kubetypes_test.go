package v2_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	v1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	v2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kube"
)

// spellings are the two ways kube-scheduler's own tests
// (k8s.io/kube-scheduler/extender/v1 types_test.go) write these messages:
// as encoding/json writes the Go types (Go field names), and the whole
// document lower-cased.
func spellings(t *testing.T, v any) map[string][]byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return map[string][]byte{"Go field names": b, "lower case": []byte(strings.ToLower(string(b)))}
}

// TestKubernetesAnswersDecodeIdenticallyInEverySpelling decodes an
// extender's answers, written with kube-scheduler's own types, with the
// 1.0.0 generated types and their schemas, and converts them up: every
// spelling gives the same result.
func TestKubernetesAnswersDecodeIdenticallyInEverySpelling(t *testing.T) {
	nodes := &corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "nodename"}}, {ObjectMeta: metav1.ObjectMeta{Name: "node2"}}}}
	for _, tc := range []struct {
		name   string
		answer any                           // as a Kubernetes extender writes it
		decode func(raw []byte) (any, error) // the 1.0.0 type, validated, converted up
	}{
		{"filter with Nodes", &extenderv1.ExtenderFilterResult{Nodes: nodes, FailedNodes: extenderv1.FailedNodesMap{"foo": "bar"},
			FailedAndUnresolvableNodes: extenderv1.FailedNodesMap{"baz": "maintenance: gone"}}, decodeFilter},
		{"filter with NodeNames", &extenderv1.ExtenderFilterResult{NodeNames: &[]string{"node1"}, FailedNodes: extenderv1.FailedNodesMap{"foo": "bar"}}, decodeFilter},
		{"filter with an error", &extenderv1.ExtenderFilterResult{Error: "myerror"}, decodeFilter},
		{"prioritize", &extenderv1.HostPriorityList{{Host: "myhost", Score: 1}, {Host: "other", Score: 10}}, func(raw []byte) (any, error) {
			var out v1.HostPriorityList
			if err := validated("HostPriorityList", raw, &out); err != nil {
				return nil, err
			}
			return v2.PrioritizeResponseFromV1(&out)
		}},
		{"preemption", &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"foo": {Pods: []*extenderv1.MetaPod{{UID: "myuid"}}, NumPDBViolations: 1}, "bar": {}}}, func(raw []byte) (any, error) {
			var out v1.ExtenderPreemptionResult
			if err := validated("ExtenderPreemptionResult", raw, &out); err != nil {
				return nil, err
			}
			return v2.PreemptResponseFromV1(&out)
		}},
		{"bind", &extenderv1.ExtenderBindingResult{}, decodeBind},
		{"bind refused", &extenderv1.ExtenderBindingResult{Error: "myerror"}, decodeBind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var results []any
			var errs []string
			for spelling, raw := range spellings(t, tc.answer) {
				got, err := tc.decode(raw)
				if err != nil {
					errs = append(errs, err.Error())
				} else {
					results = append(results, got)
				}
				t.Logf("%s: %s", spelling, raw)
			}
			if len(errs) > 0 {
				require.Len(t, errs, 2, "either every spelling fails or none: %v", errs)
				assert.Equal(t, errs[0], errs[1])
				return
			}
			require.Len(t, results, 2)
			assert.Equal(t, results[0], results[1])
			if f, ok := results[0].(filtered); ok {
				assert.NotEmpty(t, f.Response.Feasible, "the feasible nodes were read")
				assert.NotEmpty(t, f.Response.Failed, "the failures were read")
			}
		})
	}
}

func validated(message string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return v1.Contract.ValidateJSON(message, canonical)
}

// filtered is what a Filter answer says, with its node objects decoded.
type filtered struct {
	Response *v2.FilterResponse
	Nodes    *corev1.NodeList
}

func decodeFilter(raw []byte) (any, error) {
	var out v1.ExtenderFilterResult
	if err := validated("ExtenderFilterResult", raw, &out); err != nil {
		return nil, err
	}
	up, err := v2.FilterResponseFromV1(&out)
	if err != nil {
		return nil, err
	}
	list, err := kube.DecodeNodeList(json.RawMessage(out.Nodes))
	return filtered{up, list}, err
}

func decodeBind(raw []byte) (any, error) {
	var out v1.ExtenderBindingResult
	if err := validated("ExtenderBindingResult", raw, &out); err != nil {
		return nil, err
	}
	return v2.BindResponseFromV1(&out)
}
