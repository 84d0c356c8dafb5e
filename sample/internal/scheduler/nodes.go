package scheduler

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
)

// nodeObjects returns the named nodes as the core/v1 NodeList
// kube-scheduler sends an extender that does not cache nodes, built from
// what their kubelets reported through the node controller; a node that
// left the cache since it was a candidate is left out.
func (s *Scheduler) nodeObjects(names []string) (*corev1.NodeList, error) {
	byName := map[string]nhv2.NodeHealth{}
	for _, h := range s.Nodes() {
		byName[h.NodeName] = h
	}
	list := &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []corev1.Node{}}
	for _, name := range names {
		if h, ok := byName[name]; ok {
			list.Items = append(list.Items, NodeObject(h))
		}
	}
	return list, nil
}

// NodeObject returns a node's health as a core/v1 Node: its labels,
// taints, capacity, allocatable (what is left of it for new pods),
// conditions and addresses.
func NodeObject(h nhv2.NodeHealth) corev1.Node {
	n := corev1.Node{
		TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: h.NodeName, Labels: h.Labels},
		Status:     corev1.NodeStatus{Allocatable: resourceList(h.Allocatable)},
	}
	if h.Capacity != nil {
		n.Status.Capacity = resourceList(*h.Capacity)
	}
	for _, t := range h.Taints {
		ct := corev1.Taint{Key: t.Key, Effect: corev1.TaintEffect(t.Effect)}
		if t.Value != nil {
			ct.Value = *t.Value
		}
		n.Spec.Taints = append(n.Spec.Taints, ct)
	}
	for _, a := range h.Addresses {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
	}
	for _, c := range h.Conditions {
		cc := corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type), Status: corev1.ConditionStatus(c.Status)}
		if c.Reason != nil {
			cc.Reason = *c.Reason
		}
		if c.Message != nil {
			cc.Message = *c.Message
		}
		n.Status.Conditions = append(n.Status.Conditions, cc)
	}
	return n
}

func resourceList(r nhv2.Resources) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(r.CPUMillis, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(r.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:   resource.MustParse(strconv.FormatInt(r.Pods, 10)),
	}
}

// candidatesFor returns the ready, schedulable nodes whose NoSchedule and
// NoExecute taints the pod tolerates and whose resources left fit it, as
// kube-scheduler's TaintToleration and NodeResourcesFit filters keep them
// before any extender is called.
func (s *Scheduler) candidatesFor(pod extv2.PodRef) []string {
	var out []string
	for _, h := range s.Nodes() {
		if h.State != nhv2.NodeHealthStateReady || !h.Schedulable || !tolerates(pod, h.Taints) || !fits(pod, h.Allocatable) {
			continue
		}
		out = append(out, h.NodeName)
	}
	return out
}

// fits reports whether what the pod requests fits in left, what is left
// of a node's allocatable resources: the node controller subtracts what
// the pods bound to the node request (NodeResourcesFit, by requests only).
func fits(pod extv2.PodRef, left nhv2.Resources) bool {
	return left.Pods >= 1 && pod.Requests.CPUMillis <= left.CPUMillis && pod.Requests.MemoryBytes <= left.MemoryBytes
}

// tolerates reports whether the pod tolerates every taint that keeps pods
// off a node (NoSchedule, NoExecute).
func tolerates(pod extv2.PodRef, taints []nhv2.Taint) bool {
	var tolerations []corev1.Toleration
	for _, t := range pod.Tolerations {
		tolerations = append(tolerations, extv2.TolerationToCore(t))
	}
	logger := klog.Background()
	for _, t := range taints {
		taint := corev1.Taint{Key: t.Key, Effect: corev1.TaintEffect(t.Effect)}
		if t.Value != nil {
			taint.Value = *t.Value
		}
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for i := range tolerations {
			if tolerations[i].ToleratesTaint(logger, &taint, false) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// interested reports whether the extender is called for pod: always,
// unless it manages resources and the pod requests or limits none of
// them, as kube-scheduler's IsInterested reads the pod's core/v1 form
// ([extv2.PodRefToCore]), which always requests CPU and memory and
// requests every resource of Requests.Extended.
func (s *Scheduler) interested(e *extender, pod extv2.PodRef) bool {
	if len(e.cfg.ManagedResources) == 0 {
		return true
	}
	for _, r := range e.cfg.ManagedResources {
		if _, ok := pod.Requests.Extended[r]; ok || r == string(corev1.ResourceCPU) || r == string(corev1.ResourceMemory) {
			return true
		}
	}
	return false
}

// objects is how 1.0.0 requests to the extender carry nodes: whole unless
// it caches them.
func (s *Scheduler) objects(e *extender) extv2.V1Objects {
	var o extv2.V1Objects
	if !e.cfg.NodeCacheCapable {
		o.Nodes = s.nodeObjects
	}
	return o
}

// callContext bounds a call to the extender by its HTTPTimeout.
func (e *extender) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.cfg.HTTPTimeout > 0 {
		return context.WithTimeout(ctx, e.cfg.HTTPTimeout)
	}
	return ctx, func() {}
}
