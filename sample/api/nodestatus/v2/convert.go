package v2

import (
	"fmt"
	"strconv"

	"github.com/lockstep-dev/lockstep/framework"
	v1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	"github.com/lockstep-dev/lockstep/sample/internal/quantity"
)

// The conversions between 1.0.0 and 2.0.0, for fork mode. They are written
// by hand: conditions move between a list and an object, and resources
// between quantity strings and integers.
//
// Going up loses what 2.0.0 cannot say: resources other than cpu, memory
// and pods. Going down loses nothing.

// ForkV1 lets a 2.0.0 kubelet in fork mode call a 1.0.0 node controller
// and watch its pod assignments: its requests are converted down, the
// answers and the assignments up ([framework.ClientConfig].Fork).
var ForkV1 = framework.Fork{Contract: v1.Contract, Methods: map[string]framework.MethodConversion{
	MethodReportStatus:      framework.ConvertMethod(NodeStatusToV1, AckFromV1),
	MethodReportPodStatuses: framework.ConvertMethod(PodStatusToV1, AckFromV1),
}, Topics: map[string]framework.TopicConversion{
	TopicPodAssignment: framework.ConvertTopic(PodAssignmentFromV1),
}}

// ServeV1 makes s, which serves 2.0.0 with [Register], also serve 1.0.0
// kubelets: their calls are converted up, handled by the 2.0.0 handlers,
// and the answers converted down; the PodAssignment topic is held at 1.0.0
// too, every change written through the 2.0.0 writer ([ServePodAssignment],
// before or after) converted down once.
func ServeV1(s *framework.Server) {
	framework.ForkUnary(s, v1.Contract, Contract, MethodReportStatus, NodeStatusFromV1, AckToV1)
	framework.ForkBatch(s, v1.Contract, Contract, MethodReportPodStatuses, PodStatusFromV1, AckToV1)
	framework.ForkServedTopic(s, v1.Contract, Contract, TopicPodAssignment, PodAssignmentToV1)
}

// conditionTypes pairs each 1.0.0 condition type with its 2.0.0 member.
var conditionTypes = []struct {
	v1     v1.NodeConditionType
	member func(*Conditions) **Condition
}{
	{v1.NodeConditionTypeMemoryPressure, func(c *Conditions) **Condition { return &c.MemoryPressure }},
	{v1.NodeConditionTypeDiskPressure, func(c *Conditions) **Condition { return &c.DiskPressure }},
	{v1.NodeConditionTypePIDPressure, func(c *Conditions) **Condition { return &c.PidPressure }},
	{v1.NodeConditionTypeNetworkUnavailable, func(c *Conditions) **Condition { return &c.NetworkUnavailable }},
}

// NodeStatusFromV1 converts a 1.0.0 status up. A status without a Ready
// condition gets ready Unknown, reason NotReported.
func NodeStatusFromV1(in *v1.NodeStatus) (*NodeStatus, error) {
	out := &NodeStatus{NodeName: in.NodeName, KubeletVersion: in.KubeletVersion, Unschedulable: in.Unschedulable}
	notReported := "NotReported"
	out.Conditions.Ready = Condition{Status: ConditionStatusUnknown, Reason: &notReported}
	for _, c := range in.Conditions {
		up := Condition{Status: ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime}
		if c.Type == v1.NodeConditionTypeReady {
			out.Conditions.Ready = up
			continue
		}
		for _, ct := range conditionTypes {
			if ct.v1 == c.Type {
				*ct.member(&out.Conditions) = &up
			}
		}
	}
	var err error
	if out.Capacity, err = resourcesFromV1(in.Capacity); err != nil {
		return nil, framework.NewError(framework.CodeInvalidArgument, fmt.Errorf("capacity: %w", err))
	}
	if out.Allocatable, err = resourcesFromV1(in.Allocatable); err != nil {
		return nil, framework.NewError(framework.CodeInvalidArgument, fmt.Errorf("allocatable: %w", err))
	}
	out.Labels = in.Labels
	for _, t := range in.Taints {
		out.Taints = append(out.Taints, Taint{Key: t.Key, Value: t.Value, Effect: TaintEffect(t.Effect)})
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, NodeAddress{Type: NodeAddressType(a.Type), Address: a.Address})
	}
	return out, nil
}

// NodeStatusToV1 converts a 2.0.0 status down; conditions are listed
// Ready first.
func NodeStatusToV1(in *NodeStatus) (*v1.NodeStatus, error) {
	out := &v1.NodeStatus{NodeName: in.NodeName, KubeletVersion: in.KubeletVersion, Unschedulable: in.Unschedulable,
		Capacity: resourcesToV1(in.Capacity), Allocatable: resourcesToV1(in.Allocatable), Labels: in.Labels}
	for _, t := range in.Taints {
		out.Taints = append(out.Taints, v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)})
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, v1.NodeAddress{Type: v1.NodeAddressType(a.Type), Address: a.Address})
	}
	down := func(t v1.NodeConditionType, c *Condition) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: v1.NodeConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, LastTransitionTime: c.Since}
	}
	out.Conditions = append(out.Conditions, down(v1.NodeConditionTypeReady, &in.Conditions.Ready))
	for _, ct := range conditionTypes {
		if c := *ct.member(&in.Conditions); c != nil {
			out.Conditions = append(out.Conditions, down(ct.v1, c))
		}
	}
	return out, nil
}

// resourcesFromV1 reads cpu, memory and pods; a resource not listed is 0.
func resourcesFromV1(in v1.ResourceList) (Resources, error) {
	var out Resources
	var err error
	if q, ok := in["cpu"]; ok {
		if out.CPUMillis, err = quantity.Millis(string(q)); err != nil {
			return out, err
		}
	}
	if q, ok := in["memory"]; ok {
		if out.MemoryBytes, err = quantity.Value(string(q)); err != nil {
			return out, err
		}
	}
	if q, ok := in["pods"]; ok {
		if out.Pods, err = quantity.Value(string(q)); err != nil {
			return out, err
		}
	}
	return out, nil
}

func resourcesToV1(in Resources) v1.ResourceList {
	return v1.ResourceList{
		"cpu":    v1.Quantity(quantity.FormatMillis(in.CPUMillis)),
		"memory": v1.Quantity(quantity.FormatBytes(in.MemoryBytes)),
		"pods":   v1.Quantity(strconv.FormatInt(in.Pods, 10)),
	}
}

// PodAssignmentToV1 converts an assignment down: requests become quantity
// strings.
func PodAssignmentToV1(in *PodAssignment) (*v1.PodAssignment, error) {
	return &v1.PodAssignment{UID: in.UID, Namespace: in.Namespace, Name: in.Name, NodeName: in.NodeName,
		DesiredState: v1.PodAssignmentDesiredState(in.DesiredState), Requests: v1.ResourceList{
			"cpu": v1.Quantity(quantity.FormatMillis(in.Requests.CPUMillis)), "memory": v1.Quantity(quantity.FormatBytes(in.Requests.MemoryBytes)),
		}}, nil
}

// PodAssignmentFromV1 converts an assignment up, as a 2.0.0 kubelet in fork
// mode watching a 1.0.0 node controller reads it; a resource not listed
// is 0.
func PodAssignmentFromV1(in *v1.PodAssignment) (*PodAssignment, error) {
	r, err := resourcesFromV1(in.Requests)
	if err != nil {
		return nil, framework.NewError(framework.CodeInvalidArgument, fmt.Errorf("requests: %w", err))
	}
	return &PodAssignment{UID: in.UID, Namespace: in.Namespace, Name: in.Name, NodeName: in.NodeName,
		DesiredState: PodAssignmentDesiredState(in.DesiredState), Requests: PodRequests{CPUMillis: r.CPUMillis, MemoryBytes: r.MemoryBytes}}, nil
}

// PodStatusFromV1 converts a pod status up; the message is the same in
// both versions.
func PodStatusFromV1(in *v1.PodStatus) (*PodStatus, error) {
	return &PodStatus{NodeName: in.NodeName, Namespace: in.Namespace, Name: in.Name, UID: in.UID,
		Phase: PodStatusPhase(in.Phase), Ready: in.Ready, RestartCount: in.RestartCount}, nil
}

// PodStatusToV1 converts a pod status down.
func PodStatusToV1(in *PodStatus) (*v1.PodStatus, error) {
	return &v1.PodStatus{NodeName: in.NodeName, Namespace: in.Namespace, Name: in.Name, UID: in.UID,
		Phase: v1.PodStatusPhase(in.Phase), Ready: in.Ready, RestartCount: in.RestartCount}, nil
}

// AckFromV1 converts an answer up.
func AckFromV1(in *v1.Ack) (*Ack, error) { return &Ack{Accepted: in.Accepted}, nil }

// AckToV1 converts an answer down.
func AckToV1(in *Ack) (*v1.Ack, error) { return &v1.Ack{Accepted: in.Accepted}, nil }
