package v2

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
	v1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	"github.com/lockstep-dev/lockstep/sample/internal/kube"
)

// The conversions between 1.0.0 (the Kubernetes extender protocol) and
// 2.0.0, written by hand, for fork mode.
//
// A 1.0.0 failure is free text; a 2.0.0 failure's reason travels down as
// its prefix ("Maintenance: node is in a maintenance window") and is read
// back up from it, so failures survive a round trip. Scores scale between
// 0–1 and 0–10 (MaxExtenderPriority), rounded to the nearest integer going
// down. A 1.0.0 Error member is a coded error going up: internal for
// Filter and Prioritize, conflict for Bind.
//
// A 1.0.0 Filter request may carry whole Node objects (Nodes) instead of
// names, and expects them back in its answer; a conversion of the answer
// alone cannot know which form was asked, so a 2.0.0 extender serving
// 1.0.0 answers Filter with a hand-written handler that has the request
// (see [FilterResponseToV1]).

// ForkV1 lets a 2.0.0 scheduler in fork mode call 1.0.0 extenders, with a
// handshake or pinned ([framework.ClientConfig].Fork and .Pinned): requests
// are converted down (node names only, the pod as a core/v1 Pod) and
// answers up.
var ForkV1 = framework.Fork{Contract: v1.Contract, Methods: map[string]framework.MethodConversion{
	MethodFilter:     framework.ConvertMethod(FilterRequestToV1, FilterResponseFromV1),
	MethodPrioritize: framework.ConvertMethod(PrioritizeRequestToV1, PrioritizeResponseFromV1),
	MethodBind:       framework.ConvertMethod(BindRequestToV1, BindResponseFromV1),
}}

// MaxV1Score is MaxExtenderPriority of the Kubernetes extender protocol:
// 1.0.0 scores run from 0 to it.
const MaxV1Score = 10

// PodRefFromV1 reads the pod of a 1.0.0 request.
func PodRefFromV1(pod v1.Pod) (PodRef, error) {
	p, err := kube.DecodePod(json.RawMessage(pod))
	if err != nil {
		return PodRef{}, framework.NewError(framework.CodeInvalidArgument, err)
	}
	cpu, mem, err := p.Requests()
	if err != nil {
		return PodRef{}, framework.NewError(framework.CodeInvalidArgument, fmt.Errorf("pod %s: %w", p.Metadata.Name, err))
	}
	return PodRef{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name, UID: p.Metadata.UID, Labels: p.Metadata.Labels,
		Requests: Requests{CPUMillis: cpu, MemoryBytes: mem}}, nil
}

// PodRefToV1 writes a pod as the core/v1 Pod a 1.0.0 request carries: its
// metadata and one container with its requests.
func PodRefToV1(pod PodRef) (v1.Pod, error) {
	b, err := json.Marshal(kube.NewPod(kube.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Labels: pod.Labels},
		pod.Requests.CPUMillis, pod.Requests.MemoryBytes))
	return v1.Pod(b), err
}

// NodeNamesFromV1 returns the candidate nodes of a 1.0.0 request, from
// NodeNames or else from Nodes.
func NodeNamesFromV1(in *v1.ExtenderArgs) ([]string, error) {
	if names, ok := in.NodeNames.Get(); ok {
		return names, nil
	}
	list, err := kube.DecodeNodeList(json.RawMessage(in.Nodes))
	if err != nil {
		return nil, framework.NewError(framework.CodeInvalidArgument, err)
	}
	if list == nil {
		return []string{}, nil
	}
	return list.Names(), nil
}

func argsFromV1(in *v1.ExtenderArgs) (PodRef, []string, error) {
	pod, err := PodRefFromV1(in.Pod)
	if err != nil {
		return PodRef{}, nil, err
	}
	nodes, err := NodeNamesFromV1(in)
	return pod, nodes, err
}

func argsToV1(pod PodRef, nodes []string) (*v1.ExtenderArgs, error) {
	p, err := PodRefToV1(pod)
	if err != nil {
		return nil, err
	}
	return &v1.ExtenderArgs{Pod: p, NodeNames: jsonwire.Value(append([]string{}, nodes...))}, nil
}

// FilterRequestFromV1 converts a Filter request up.
func FilterRequestFromV1(in *v1.ExtenderArgs) (*FilterRequest, error) {
	pod, nodes, err := argsFromV1(in)
	if err != nil {
		return nil, err
	}
	return &FilterRequest{Pod: pod, Nodes: nodes}, nil
}

// FilterRequestToV1 converts a Filter request down, nodes by name.
func FilterRequestToV1(in *FilterRequest) (*v1.ExtenderArgs, error) {
	return argsToV1(in.Pod, in.Nodes)
}

// FilterResponseToV1 converts a Filter answer down in the NodeNames form.
// An answer to a request that carried Nodes must carry Nodes instead: the
// caller replaces NodeNames by the request's node objects that are
// feasible ([kube.KeepNodes]).
func FilterResponseToV1(in *FilterResponse) (*v1.ExtenderFilterResult, error) {
	failed, unresolvable := v1.FailedNodesMap{}, v1.FailedNodesMap{}
	for _, f := range in.Failed {
		text := string(f.Reason)
		if f.Message != nil && *f.Message != "" {
			text += ": " + *f.Message
		}
		if f.Unresolvable != nil && *f.Unresolvable {
			unresolvable[f.Node] = text
		} else {
			failed[f.Node] = text
		}
	}
	return &v1.ExtenderFilterResult{
		NodeNames:                  jsonwire.Value(append([]string{}, in.Feasible...)),
		FailedNodes:                jsonwire.Value(failed),
		FailedAndUnresolvableNodes: jsonwire.Value(unresolvable),
	}, nil
}

// FilterResponseFromV1 converts a Filter answer up, from NodeNames or else
// Nodes. Failures are sorted by node.
func FilterResponseFromV1(in *v1.ExtenderFilterResult) (*FilterResponse, error) {
	if in.Error != nil && *in.Error != "" {
		return nil, framework.Errorf(framework.CodeInternal, "extender failed to filter: %s", *in.Error)
	}
	out := &FilterResponse{Feasible: []string{}}
	if names, ok := in.NodeNames.Get(); ok {
		out.Feasible = append(out.Feasible, names...)
	} else if list, err := kube.DecodeNodeList(json.RawMessage(in.Nodes)); err != nil {
		return nil, framework.NewError(framework.CodeInternal, err)
	} else if list != nil {
		out.Feasible = list.Names()
	}
	for _, m := range []struct {
		failures     jsonwire.Nullable[v1.FailedNodesMap]
		unresolvable bool
	}{{in.FailedNodes, false}, {in.FailedAndUnresolvableNodes, true}} {
		failures, _ := m.failures.Get()
		for node, text := range failures {
			out.Failed = append(out.Failed, failureFromV1(node, text, m.unresolvable))
		}
	}
	sort.Slice(out.Failed, func(i, j int) bool { return out.Failed[i].Node < out.Failed[j].Node })
	return out, nil
}

// failureFromV1 reads the reason back from a failure's text.
func failureFromV1(node, text string, unresolvable bool) NodeFailure {
	f := NodeFailure{Node: node, Reason: NodeFailureReasonOther}
	if unresolvable {
		f.Unresolvable = &unresolvable
	}
	message := text
	for _, r := range []NodeFailureReason{NodeFailureReasonMaintenance, NodeFailureReasonUnschedulable, NodeFailureReasonOther} {
		if text == string(r) {
			f.Reason, message = r, ""
			break
		}
		if rest, ok := strings.CutPrefix(text, string(r)+": "); ok {
			f.Reason, message = r, rest
			break
		}
	}
	if message != "" {
		f.Message = &message
	}
	return f
}

// PrioritizeRequestFromV1 converts a Prioritize request up.
func PrioritizeRequestFromV1(in *v1.ExtenderArgs) (*PrioritizeRequest, error) {
	pod, nodes, err := argsFromV1(in)
	if err != nil {
		return nil, err
	}
	return &PrioritizeRequest{Pod: pod, Nodes: nodes}, nil
}

// PrioritizeRequestToV1 converts a Prioritize request down, nodes by name.
func PrioritizeRequestToV1(in *PrioritizeRequest) (*v1.ExtenderArgs, error) {
	return argsToV1(in.Pod, in.Nodes)
}

// PrioritizeResponseToV1 converts scores down to 0–10.
func PrioritizeResponseToV1(in *PrioritizeResponse) (*v1.HostPriorityList, error) {
	out := make(v1.HostPriorityList, len(in.Scores))
	for i, s := range in.Scores {
		out[i] = v1.HostPriority{Host: s.Node, Score: int64(math.Round(s.Score * MaxV1Score))}
	}
	return &out, nil
}

// PrioritizeResponseFromV1 converts scores up to 0–1.
func PrioritizeResponseFromV1(in *v1.HostPriorityList) (*PrioritizeResponse, error) {
	out := &PrioritizeResponse{Scores: make([]NodeScore, len(*in))}
	for i, h := range *in {
		out.Scores[i] = NodeScore{Node: h.Host, Score: float64(h.Score) / MaxV1Score}
	}
	return out, nil
}

// BindRequestFromV1 converts a Bind request up; 1.0.0 names the pod
// without its requests, which are left 0.
func BindRequestFromV1(in *v1.ExtenderBindingArgs) (*BindRequest, error) {
	return &BindRequest{Pod: PodRef{Namespace: in.PodNamespace, Name: in.PodName, UID: in.PodUID}, Node: in.Node}, nil
}

// BindRequestToV1 converts a Bind request down.
func BindRequestToV1(in *BindRequest) (*v1.ExtenderBindingArgs, error) {
	return &v1.ExtenderBindingArgs{PodName: in.Pod.Name, PodNamespace: in.Pod.Namespace, PodUID: in.Pod.UID, Node: in.Node}, nil
}

// BindResponseToV1 converts a successful binding down: an empty Error.
func BindResponseToV1(*BindResponse) (*v1.ExtenderBindingResult, error) {
	return &v1.ExtenderBindingResult{}, nil
}

// BindResponseFromV1 converts a binding up: a non-empty Error is a
// conflict.
func BindResponseFromV1(in *v1.ExtenderBindingResult) (*BindResponse, error) {
	if in.Error != nil && *in.Error != "" {
		return nil, framework.Errorf(framework.CodeConflict, "extender failed to bind: %s", *in.Error)
	}
	return &BindResponse{}, nil
}
