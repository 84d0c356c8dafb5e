// Package kube reads and writes the Kubernetes core/v1 objects (the real
// k8s.io/api types) that travel in the scheduler extender protocol: the
// Pod being scheduled and the NodeList of candidate nodes.
package kube

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PauseImage is the image of the sample's pods' one container: the
// sample places pods, it does not run them.
const PauseImage = "registry.k8s.io/pause:3.10"

// Requests returns the sum of the pod's container requests of CPU, in
// millicores, and memory, in bytes.
func Requests(p *corev1.Pod) (cpuMillis, memoryBytes int64) {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			cpuMillis += q.MilliValue()
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			memoryBytes += q.Value()
		}
	}
	return cpuMillis, memoryBytes
}

// OtherRequests returns the pod's requests of resources other than CPU
// and memory, by name, each in its own unit (rounded up to an integer):
// as kube-scheduler counts a pod's request, the larger of the sum over
// its containers and the largest of any one init container (init
// containers run one at a time, before the others). A limit without a
// request counts as the request, as the API server defaults it. Nil when
// there are none.
func OtherRequests(p *corev1.Pod) map[string]int64 {
	var out map[string]int64
	for _, c := range p.Spec.Containers {
		for name, v := range containerRequests(c) {
			out = addRequest(out, name, v)
		}
	}
	for _, c := range p.Spec.InitContainers {
		for name, v := range containerRequests(c) {
			if v > out[string(name)] {
				out = addRequest(out, name, v-out[string(name)])
			}
		}
	}
	return out
}

// containerRequests returns c's requests, a limit without a request
// counting as the request, each rounded up to an integer.
func containerRequests(c corev1.Container) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			out[name] = q.Value()
		}
	}
	for name, q := range c.Resources.Requests {
		out[name] = q.Value()
	}
	return out
}

func addRequest(to map[string]int64, name corev1.ResourceName, v int64) map[string]int64 {
	if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
		return to
	}
	if to == nil {
		to = map[string]int64{}
	}
	to[string(name)] += v
	return to
}

// SetOtherRequests sets the requests of resources other than CPU and
// memory of the pod's first container to other's (as [OtherRequests]
// returns them), and their limits to the same where Kubernetes requires
// a limit equal to the request: extended resources (a domain other than
// kubernetes.io, such as nvidia.com/gpu) and hugepages. An extender that
// reads such a resource from the limits (gpushare-scheduler-extender's
// aliyun.com/gpu-mem) finds it there, as in a pod the API server stored.
func SetOtherRequests(p *corev1.Pod, other map[string]int64) {
	if len(other) == 0 || len(p.Spec.Containers) == 0 {
		return
	}
	r := &p.Spec.Containers[0].Resources
	for name, v := range other {
		rn := corev1.ResourceName(name)
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[rn] = *resource.NewQuantity(v, resource.DecimalSI)
		if limitEqualsRequest(name) {
			if r.Limits == nil {
				r.Limits = corev1.ResourceList{}
			}
			r.Limits[rn] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
}

// limitEqualsRequest reports whether Kubernetes requires a resource's
// limit to equal its request: an extended resource (a name with a domain
// outside kubernetes.io, not a quota's requests.*) or hugepages.
func limitEqualsRequest(name string) bool {
	if strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		return true
	}
	return strings.Contains(name, "/") && !strings.Contains(name, "kubernetes.io/") && !strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix)
}

// NewPod returns a pending pod with one container named main requesting
// cpuMillis and memoryBytes, tolerating tolerations.
func NewPod(meta metav1.ObjectMeta, cpuMillis, memoryBytes int64, tolerations []corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: PauseImage, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMillis, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(memoryBytes, resource.BinarySI),
				}}}},
			Tolerations: tolerations,
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// DecodePod reads a Pod from its JSON.
func DecodePod(raw json.RawMessage) (*corev1.Pod, error) {
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	return &p, nil
}

// DecodeNodeList reads a NodeList from its JSON; JSON null or nothing is
// no list (nil).
func DecodeNodeList(raw json.RawMessage) (*corev1.NodeList, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var l corev1.NodeList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("node list: %w", err)
	}
	return &l, nil
}

// Names returns the names of the list's nodes, in order.
func Names(l *corev1.NodeList) []string {
	names := make([]string, len(l.Items))
	for i, n := range l.Items {
		names[i] = n.Name
	}
	return names
}

// KeepNodes returns the NodeList JSON raw with only the nodes whose names
// keep accepts, every other member of the list and of each node left as it
// was, so an extender answers with the very objects it was sent.
func KeepNodes(raw json.RawMessage, keep func(name string) bool) (json.RawMessage, error) {
	var list map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("node list: %w", err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(list["items"], &items); err != nil && list["items"] != nil {
		return nil, fmt.Errorf("node list items: %w", err)
	}
	kept := make([]json.RawMessage, 0, len(items))
	for _, item := range items {
		var n struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(item, &n); err != nil {
			return nil, fmt.Errorf("node list item: %w", err)
		}
		if keep(n.Metadata.Name) {
			kept = append(kept, item)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	list["items"] = b
	return json.Marshal(list)
}
