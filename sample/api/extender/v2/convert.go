package v2

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
// down; a 1.0.0 score outside 0–10 goes up outside 0–1
// ([PrioritizeResponseFromV1]). A 1.0.0 Error member is a coded error
// going up: internal for Filter and Prioritize, conflict for Bind.
//
// A 1.0.0 Filter request may carry whole Node objects (Nodes) instead of
// names, and expects them back in its answer; a conversion of the answer
// alone cannot know which form was asked, so a 2.0.0 extender serving
// 1.0.0 answers Filter with a hand-written handler that has the request
// (see [FilterResponseToV1]).

// ForkV1 lets a 2.0.0 scheduler in fork mode call 1.0.0 extenders, with a
// handshake or pinned ([framework.ClientConfig].Fork and .Pinned): requests
// are converted down (node names only, the pod as a core/v1 Pod) and
// answers up. [ForkV1With] sends whole nodes instead.
var ForkV1 = ForkV1With(V1Objects{})

// NodeObjects returns the core/v1 NodeList of the named nodes, in order:
// what a 1.0.0 request to an extender that does not cache nodes
// (nodeCacheCapable false) carries instead of names.
type NodeObjects func(names []string) (*corev1.NodeList, error)

// V1Objects is how 1.0.0 requests carry nodes: whole nodes built by Nodes,
// or names where it is nil (an extender that caches nodes). Pods are
// [PodRefToCore]'s.
type V1Objects struct {
	Nodes NodeObjects
}

// ForkV1With is [ForkV1] with requests that carry nodes as objs builds
// them.
func ForkV1With(objs V1Objects) framework.Fork {
	filterUp := FilterResponseFromV1
	if objs.Nodes != nil {
		filterUp = FilterResponseFromV1Nodes
	}
	return framework.Fork{Contract: v1.Contract, Methods: map[string]framework.MethodConversion{
		MethodFilter: framework.ConvertMethod(func(in *FilterRequest) (*v1.ExtenderArgs, error) {
			return ArgsToV1(in.Pod, in.Nodes, objs)
		}, filterUp),
		MethodPrioritize: framework.ConvertMethod(func(in *PrioritizeRequest) (*v1.ExtenderArgs, error) {
			return ArgsToV1(in.Pod, in.Nodes, objs)
		}, PrioritizeResponseFromV1),
		MethodBind: framework.ConvertMethod(BindRequestToV1, BindResponseFromV1),
		MethodProcessPreemption: framework.ConvertMethod(func(in *PreemptRequest) (*v1.ExtenderPreemptionArgs, error) {
			return PreemptRequestToV1(in, objs)
		}, PreemptResponseFromV1),
	}}
}

// MaxV1Score is MaxExtenderPriority of the Kubernetes extender protocol:
// 1.0.0 scores run from 0 to it.
const MaxV1Score = 10

// PodRefFromV1 reads the pod of a 1.0.0 request.
func PodRefFromV1(pod v1.Pod) (PodRef, error) {
	p, err := kube.DecodePod(json.RawMessage(pod))
	if err != nil {
		return PodRef{}, framework.NewError(framework.CodeInvalidArgument, err)
	}
	cpu, mem := kube.Requests(p)
	out := PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Labels: p.Labels, Annotations: p.Annotations,
		Requests: Requests{CPUMillis: cpu, MemoryBytes: mem, Extended: kube.OtherRequests(p)}}
	if p.Spec.Priority != nil {
		prio := int64(*p.Spec.Priority)
		out.Priority = &prio
	}
	if p.Spec.PriorityClassName != "" {
		out.PriorityClassName = &p.Spec.PriorityClassName
	}
	for _, t := range p.Spec.Tolerations {
		out.Tolerations = append(out.Tolerations, TolerationFromCore(t))
	}
	return out, nil
}

// PodRefToV1 writes a pod as the core/v1 Pod a 1.0.0 request carries: its
// metadata, one container with its requests (and the limits Kubernetes
// requires of extended resources), and its tolerations.
func PodRefToV1(pod PodRef) (v1.Pod, error) {
	b, err := json.Marshal(PodRefToCore(pod))
	return v1.Pod(b), err
}

// PodRefToCore returns the pod as a core/v1 Pod, with its priority
// (spec.priority, spec.priorityClassName) as the API server resolved it
// from its PriorityClass, and its requests of resources other than CPU and
// memory as the API server stores them ([kube.SetOtherRequests]).
func PodRefToCore(pod PodRef) *corev1.Pod {
	var tolerations []corev1.Toleration
	for _, t := range pod.Tolerations {
		tolerations = append(tolerations, TolerationToCore(t))
	}
	p := kube.NewPod(metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: types.UID(pod.UID), Labels: pod.Labels, Annotations: pod.Annotations},
		pod.Requests.CPUMillis, pod.Requests.MemoryBytes, tolerations)
	kube.SetOtherRequests(p, pod.Requests.Extended)
	if pod.Priority != nil {
		prio := int32(max(math.MinInt32, min(math.MaxInt32, *pod.Priority)))
		p.Spec.Priority = &prio
	}
	if pod.PriorityClassName != nil {
		p.Spec.PriorityClassName = *pod.PriorityClassName
	}
	return p
}

// PriorityOf returns the pod's priority: 0 when it has none, as for a pod
// of no PriorityClass where none is the global default.
func PriorityOf(pod PodRef) int64 {
	if pod.Priority == nil {
		return 0
	}
	return *pod.Priority
}

// TolerationToCore returns a toleration as core/v1's.
func TolerationToCore(t Toleration) corev1.Toleration {
	var out corev1.Toleration
	if t.Key != nil {
		out.Key = *t.Key
	}
	if t.Operator != nil {
		out.Operator = corev1.TolerationOperator(*t.Operator)
	}
	if t.Value != nil {
		out.Value = *t.Value
	}
	if t.Effect != nil {
		out.Effect = corev1.TaintEffect(*t.Effect)
	}
	out.TolerationSeconds = t.TolerationSeconds
	return out
}

// TolerationFromCore reads a core/v1 toleration.
func TolerationFromCore(t corev1.Toleration) Toleration {
	var out Toleration
	if t.Key != "" {
		out.Key = &t.Key
	}
	if t.Operator != "" {
		op := TolerationOperator(t.Operator)
		out.Operator = &op
	}
	if t.Value != "" {
		out.Value = &t.Value
	}
	if t.Effect != "" {
		e := TolerationEffect(t.Effect)
		out.Effect = &e
	}
	out.TolerationSeconds = t.TolerationSeconds
	return out
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
	return kube.Names(list), nil
}

func argsFromV1(in *v1.ExtenderArgs) (PodRef, []string, error) {
	pod, err := PodRefFromV1(in.Pod)
	if err != nil {
		return PodRef{}, nil, err
	}
	nodes, err := NodeNamesFromV1(in)
	return pod, nodes, err
}

// ArgsToV1 builds a 1.0.0 request's arguments: the pod as a core/v1 Pod,
// and the candidate nodes by name, or with objs.Nodes as whole nodes
// (Nodes, NodeNames null), as kube-scheduler sends an extender that does
// not cache nodes.
func ArgsToV1(pod PodRef, nodes []string, objs V1Objects) (*v1.ExtenderArgs, error) {
	p, err := PodRefToV1(pod)
	if err != nil {
		return nil, err
	}
	if objs.Nodes == nil {
		return &v1.ExtenderArgs{Pod: p, NodeNames: jsonwire.Value(append([]string{}, nodes...))}, nil
	}
	list, err := objs.Nodes(nodes)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return &v1.ExtenderArgs{Pod: p, Nodes: v1.NodeList(b), NodeNames: jsonwire.Null[[]string]()}, nil
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
	return ArgsToV1(in.Pod, in.Nodes, V1Objects{})
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

// FilterResponseFromV1 converts up the Filter answer to a request that
// named its nodes (NodeNames): the feasible nodes are read from NodeNames,
// or else Nodes, as kube-scheduler reads the answer of an extender that
// caches nodes. Failures are sorted by node.
func FilterResponseFromV1(in *v1.ExtenderFilterResult) (*FilterResponse, error) {
	return filterResponseFromV1(in, false)
}

// FilterResponseFromV1Nodes converts up the Filter answer to a request
// that carried whole nodes (Nodes): the feasible nodes are read from Nodes
// alone, as kube-scheduler reads the answer of an extender that does not
// cache nodes. Such an answer may hold NodeNames as well, and they need
// not agree: Telemetry Aware Scheduling's list a trailing empty name.
func FilterResponseFromV1Nodes(in *v1.ExtenderFilterResult) (*FilterResponse, error) {
	return filterResponseFromV1(in, true)
}

func filterResponseFromV1(in *v1.ExtenderFilterResult, nodesSent bool) (*FilterResponse, error) {
	if in.Error != nil && *in.Error != "" {
		return nil, framework.Errorf(framework.CodeInternal, "extender failed to filter: %s", *in.Error)
	}
	out := &FilterResponse{Feasible: []string{}}
	if names, ok := in.NodeNames.Get(); ok && !nodesSent {
		out.Feasible = append(out.Feasible, names...)
	} else if list, err := kube.DecodeNodeList(json.RawMessage(in.Nodes)); err != nil {
		return nil, framework.NewError(framework.CodeInternal, err)
	} else if list != nil {
		out.Feasible = kube.Names(list)
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
	return ArgsToV1(in.Pod, in.Nodes, V1Objects{})
}

// PrioritizeResponseToV1 converts scores down to 0–10.
func PrioritizeResponseToV1(in *PrioritizeResponse) (*v1.HostPriorityList, error) {
	out := make(v1.HostPriorityList, len(in.Scores))
	for i, s := range in.Scores {
		out[i] = v1.HostPriority{Host: s.Node, Score: int64(math.Round(s.Score * MaxV1Score))}
	}
	return &out, nil
}

// PrioritizeResponseFromV1 converts scores up to 0–1, by dividing by
// MaxExtenderPriority, and nothing more: kube-scheduler takes a score
// outside 0–10 as it is (scaled by the extender's weight and MaxNodeScore
// / MaxExtenderPriority, never clamped: prioritizeNodes in schedule_one.go),
// so an extender that scores from 0 to 100 outweighs one that scores from 0
// to 10, and a scheduler that adds up weighted 2.0.0 scores ranks nodes as
// kube-scheduler does only if such a score goes up outside 0–1 too;
// clamping it to 1 would tie every node such an extender scores above 10.
// No 2.0.0 peer is sent the result.
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

// PreemptRequestToV1 converts a preemption request down as kube-scheduler
// sends it: the victims by UID (NodeNameToMetaVictims) to an extender that
// caches nodes (objs.Nodes nil), else as whole core/v1 Pods
// (NodeNameToVictims).
func PreemptRequestToV1(in *PreemptRequest, objs V1Objects) (*v1.ExtenderPreemptionArgs, error) {
	pod, err := PodRefToV1(in.Pod)
	if err != nil {
		return nil, err
	}
	out := &v1.ExtenderPreemptionArgs{Pod: pod}
	if objs.Nodes == nil {
		meta := v1.MetaVictimsMap{}
		for _, c := range in.Candidates {
			mv := v1.MetaVictims{NumPDBViolations: c.PdbViolations}
			pods := []v1.MetaPod{}
			for _, p := range c.Victims {
				pods = append(pods, v1.MetaPod{UID: p.UID})
			}
			mv.Pods = jsonwire.Value(pods)
			meta[c.Node] = mv
		}
		out.NodeNameToMetaVictims = jsonwire.Value(meta)
		return out, nil
	}
	victims := map[string]v1.Victims{}
	for _, c := range in.Candidates {
		v := v1.Victims{NumPDBViolations: c.PdbViolations}
		pods := []v1.Pod{}
		for _, p := range c.Victims {
			raw, err := PodRefToV1(p)
			if err != nil {
				return nil, err
			}
			pods = append(pods, raw)
		}
		v.Pods = jsonwire.Value(pods)
		victims[c.Node] = v
	}
	out.NodeNameToVictims = jsonwire.Value(victims)
	return out, nil
}

// PreemptRequestFromV1 converts a preemption request up, from whole
// victims or else victims by UID (the pod then has only its UID).
// Candidates are sorted by node.
func PreemptRequestFromV1(in *v1.ExtenderPreemptionArgs) (*PreemptRequest, error) {
	pod, err := PodRefFromV1(in.Pod)
	if err != nil {
		return nil, err
	}
	out := &PreemptRequest{Pod: pod, Candidates: []PreemptRequestCandidatesItem{}}
	if victims, ok := in.NodeNameToVictims.Get(); ok {
		for node, v := range victims {
			c := PreemptRequestCandidatesItem{Node: node, Victims: []PodRef{}, PdbViolations: v.NumPDBViolations}
			pods, _ := v.Pods.Get()
			for _, p := range pods {
				ref, err := PodRefFromV1(p)
				if err != nil {
					return nil, err
				}
				c.Victims = append(c.Victims, ref)
			}
			out.Candidates = append(out.Candidates, c)
		}
	} else if meta, ok := in.NodeNameToMetaVictims.Get(); ok {
		for node, v := range meta {
			c := PreemptRequestCandidatesItem{Node: node, Victims: []PodRef{}, PdbViolations: v.NumPDBViolations}
			pods, _ := v.Pods.Get()
			for _, p := range pods {
				c.Victims = append(c.Victims, PodRef{UID: p.UID})
			}
			out.Candidates = append(out.Candidates, c)
		}
	}
	sort.Slice(out.Candidates, func(i, j int) bool { return out.Candidates[i].Node < out.Candidates[j].Node })
	return out, nil
}

// PreemptResponseToV1 converts a preemption answer down: victims by UID.
func PreemptResponseToV1(in *PreemptResponse) (*v1.ExtenderPreemptionResult, error) {
	meta := v1.MetaVictimsMap{}
	for _, c := range in.Candidates {
		pods := []v1.MetaPod{}
		for _, uid := range c.Victims {
			pods = append(pods, v1.MetaPod{UID: uid})
		}
		meta[c.Node] = v1.MetaVictims{Pods: jsonwire.Value(pods), NumPDBViolations: c.PdbViolations}
	}
	return &v1.ExtenderPreemptionResult{NodeNameToMetaVictims: jsonwire.Value(meta)}, nil
}

// PreemptResponseFromV1 converts a preemption answer up; candidates are
// sorted by node.
func PreemptResponseFromV1(in *v1.ExtenderPreemptionResult) (*PreemptResponse, error) {
	out := &PreemptResponse{Candidates: []PreemptResponseCandidatesItem{}}
	meta, _ := in.NodeNameToMetaVictims.Get()
	for node, v := range meta {
		c := PreemptResponseCandidatesItem{Node: node, Victims: []string{}, PdbViolations: v.NumPDBViolations}
		pods, _ := v.Pods.Get()
		for _, p := range pods {
			c.Victims = append(c.Victims, p.UID)
		}
		out.Candidates = append(out.Candidates, c)
	}
	sort.Slice(out.Candidates, func(i, j int) bool { return out.Candidates[i].Node < out.Candidates[j].Node })
	return out, nil
}
