package v2

import (
	"fmt"
	"strconv"

	"github.com/lockstep-dev/lockstep/framework"
	v1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	"github.com/lockstep-dev/lockstep/sample/internal/quantity"
)

// The conversions between 1.0.0 and 2.0.0, written by hand. Down, the
// state Unknown becomes ready false (the reason says why); up, ready false
// becomes NotReady, since 1.0.0 cannot tell a lost node from a failing one.

// ForkV1 lets a 2.0.0 scheduler in fork mode call CheckNode, Bind and
// Evict on a 1.0.0 node controller, and watch its NodeHealth topic, each
// node's health converted up as the scheduler reads it.
var ForkV1 = framework.Fork{Contract: v1.Contract, Methods: map[string]framework.MethodConversion{
	MethodCheckNode: framework.ConvertMethod(NodeRefToV1, NodeHealthFromV1),
	MethodBind:      framework.ConvertMethod(BindingToV1, BindResultFromV1),
	MethodEvict:     framework.ConvertMethod(EvictionToV1, EvictResultFromV1),
}, Topics: map[string]framework.TopicConversion{
	TopicNodeHealth: framework.ConvertTopic(NodeHealthFromV1),
}}

// ServeV1 makes s, which serves 2.0.0 with [Register], also answer
// CheckNode, Bind and Evict for 1.0.0 schedulers. The NodeHealth topic of 1.0.0 is a topic
// of its own ([framework.ServeTopic] with [v1.Contract]); a node controller
// in fork mode writes each change to both, converted with
// [NodeHealthToV1].
func ServeV1(s *framework.Server) {
	framework.ForkUnary(s, v1.Contract, Contract, MethodCheckNode, NodeRefFromV1, NodeHealthToV1)
	framework.ForkUnary(s, v1.Contract, Contract, MethodBind, BindingFromV1, BindResultToV1)
	framework.ForkUnary(s, v1.Contract, Contract, MethodEvict, EvictionFromV1, EvictResultToV1)
}

// BindingFromV1 converts a binding up: the pod's identity moves into pod,
// its requests from quantity strings to integers (a resource not listed
// is 0).
func BindingFromV1(in *v1.Binding) (*Binding, error) {
	out := &Binding{Pod: PodRef{Namespace: in.Namespace, Name: in.Name, UID: in.UID}, NodeName: in.NodeName, Priority: in.Priority}
	if in.Requests != nil {
		r, err := podRequestsFromV1(*in.Requests)
		if err != nil {
			return nil, err
		}
		out.Requests = r
	}
	return out, nil
}

// BindingToV1 converts a binding down.
func BindingToV1(in *Binding) (*v1.Binding, error) {
	requests := podRequestsToV1(in.Requests)
	return &v1.Binding{Namespace: in.Pod.Namespace, Name: in.Pod.Name, UID: in.Pod.UID, NodeName: in.NodeName, Requests: &requests,
		Priority: in.Priority}, nil
}

func podRequestsToV1(in PodRequests) v1.ResourceList {
	return v1.ResourceList{"cpu": quantity.FormatMillis(in.CPUMillis), "memory": quantity.FormatBytes(in.MemoryBytes)}
}

func podRequestsFromV1(in v1.ResourceList) (PodRequests, error) {
	r, err := resourcesFromV1(in)
	if err != nil {
		return PodRequests{}, framework.NewError(framework.CodeInvalidArgument, fmt.Errorf("requests %w", err))
	}
	return PodRequests{CPUMillis: r.CPUMillis, MemoryBytes: r.MemoryBytes}, nil
}

// EvictionFromV1 converts an eviction up: each pod's identity moves into
// pod, the preemptor's requests become integers.
func EvictionFromV1(in *v1.Eviction) (*Eviction, error) {
	out := &Eviction{NodeName: in.NodeName, Victims: make([]PodRef, len(in.Victims))}
	for i, v := range in.Victims {
		out.Victims[i] = PodRef{Namespace: v.Namespace, Name: v.Name, UID: v.UID}
	}
	p, err := boundPodFromV1(in.Preemptor)
	if err != nil {
		return nil, err
	}
	out.Preemptor = Preemptor(p)
	return out, nil
}

// EvictionToV1 converts an eviction down.
func EvictionToV1(in *Eviction) (*v1.Eviction, error) {
	out := &v1.Eviction{NodeName: in.NodeName, Victims: make([]v1.PodName, len(in.Victims)), Preemptor: boundPodToV1(BoundPod(in.Preemptor))}
	for i, v := range in.Victims {
		out.Victims[i] = v1.PodName{Namespace: v.Namespace, Name: v.Name, UID: v.UID}
	}
	return out, nil
}

// EvictResultFromV1 converts an answer up; it is the same in both
// versions.
func EvictResultFromV1(in *v1.EvictResult) (*EvictResult, error) {
	return &EvictResult{Evicted: append([]string{}, in.Evicted...)}, nil
}

// EvictResultToV1 converts an answer down.
func EvictResultToV1(in *EvictResult) (*v1.EvictResult, error) {
	return &v1.EvictResult{Evicted: append([]string{}, in.Evicted...)}, nil
}

func boundPodToV1(in BoundPod) v1.BoundPod {
	return v1.BoundPod{Namespace: in.Pod.Namespace, Name: in.Pod.Name, UID: in.Pod.UID, Priority: in.Priority,
		Requests: podRequestsToV1(in.Requests)}
}

func boundPodFromV1(in v1.BoundPod) (BoundPod, error) {
	r, err := podRequestsFromV1(in.Requests)
	if err != nil {
		return BoundPod{}, err
	}
	return BoundPod{Pod: PodRef{Namespace: in.Namespace, Name: in.Name, UID: in.UID}, Priority: in.Priority, Requests: r}, nil
}

// BindResultFromV1 converts an answer up; it is the same in both versions.
func BindResultFromV1(in *v1.BindResult) (*BindResult, error) {
	return &BindResult{NodeName: in.NodeName}, nil
}

// BindResultToV1 converts an answer down.
func BindResultToV1(in *BindResult) (*v1.BindResult, error) {
	return &v1.BindResult{NodeName: in.NodeName}, nil
}

// NodeRefFromV1 converts a request up; it is the same in both versions.
func NodeRefFromV1(in *v1.NodeRef) (*NodeRef, error) { return &NodeRef{NodeName: in.NodeName}, nil }

// NodeRefToV1 converts a request down.
func NodeRefToV1(in *NodeRef) (*v1.NodeRef, error) { return &v1.NodeRef{NodeName: in.NodeName}, nil }

// NodeHealthToV1 converts a node's health down.
func NodeHealthToV1(in *NodeHealth) (*v1.NodeHealth, error) {
	out := &v1.NodeHealth{
		NodeName: in.NodeName, Ready: in.State == NodeHealthStateReady, Schedulable: in.Schedulable, Reason: in.Reason,
		Allocatable: resourcesToV1(in.Allocatable), Labels: in.Labels,
	}
	if in.Capacity != nil {
		c := resourcesToV1(*in.Capacity)
		out.Capacity = &c
	}
	for _, t := range in.Taints {
		out.Taints = append(out.Taints, v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)})
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, v1.NodeAddress{Type: v1.NodeAddressType(a.Type), Address: a.Address})
	}
	for _, c := range in.Conditions {
		out.Conditions = append(out.Conditions, v1.NodeCondition{Type: v1.NodeConditionType(c.Type),
			Status: v1.NodeConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	for _, p := range in.Pods {
		out.Pods = append(out.Pods, boundPodToV1(p))
	}
	return out, nil
}

func resourcesToV1(in Resources) v1.ResourceList {
	return v1.ResourceList{
		"cpu":    quantity.FormatMillis(in.CPUMillis),
		"memory": quantity.FormatBytes(in.MemoryBytes),
		"pods":   strconv.FormatInt(in.Pods, 10),
	}
}

// NodeHealthFromV1 converts a node's health up; a resource not listed is 0.
func NodeHealthFromV1(in *v1.NodeHealth) (*NodeHealth, error) {
	out := &NodeHealth{NodeName: in.NodeName, State: NodeHealthStateNotReady, Schedulable: in.Schedulable, Reason: in.Reason,
		Labels: in.Labels}
	if in.Ready {
		out.State = NodeHealthStateReady
	}
	var err error
	if out.Allocatable, err = resourcesFromV1(in.Allocatable); err != nil {
		return nil, framework.NewError(framework.CodeInvalidArgument, fmt.Errorf("allocatable %w", err))
	}
	if in.Capacity != nil {
		c, err := resourcesFromV1(*in.Capacity)
		if err != nil {
			return nil, framework.NewError(framework.CodeInvalidArgument, fmt.Errorf("capacity %w", err))
		}
		out.Capacity = &c
	}
	for _, t := range in.Taints {
		out.Taints = append(out.Taints, Taint{Key: t.Key, Value: t.Value, Effect: TaintEffect(t.Effect)})
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, NodeAddress{Type: NodeAddressType(a.Type), Address: a.Address})
	}
	for _, c := range in.Conditions {
		out.Conditions = append(out.Conditions, NodeCondition{Type: NodeConditionType(c.Type),
			Status: NodeConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	for _, p := range in.Pods {
		up, err := boundPodFromV1(p)
		if err != nil {
			return nil, err
		}
		out.Pods = append(out.Pods, up)
	}
	return out, nil
}

// resourcesFromV1 reads cpu, memory and pods; a resource not listed is 0.
func resourcesFromV1(in v1.ResourceList) (Resources, error) {
	var out Resources
	for name, read := range map[string]struct {
		parse func(string) (int64, error)
		into  *int64
	}{
		"cpu":    {quantity.Millis, &out.CPUMillis},
		"memory": {quantity.Value, &out.MemoryBytes},
		"pods":   {quantity.Value, &out.Pods},
	} {
		q, ok := in[name]
		if !ok {
			continue
		}
		n, err := read.parse(q)
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		*read.into = n
	}
	return out, nil
}
