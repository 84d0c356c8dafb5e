// Package kube reads and writes the few members of Kubernetes core/v1 Pod
// and Node objects that the sample's extender needs, in their JSON form
// (lower-case member names, as core/v1's json tags have them). Objects it
// reads may carry any other members; they are ignored.
package kube

import (
	"encoding/json"
	"fmt"

	"github.com/lockstep-dev/lockstep/sample/internal/quantity"
)

// ObjectMeta is the part of metav1.ObjectMeta the sample uses.
type ObjectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	UID       string            `json:"uid,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Pod is the part of a core/v1 Pod the sample uses.
type Pod struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
}

// PodSpec is the part of a core/v1 PodSpec the sample uses.
type PodSpec struct {
	Containers []Container `json:"containers,omitempty"`
}

// Container is the part of a core/v1 Container the sample uses.
type Container struct {
	Name      string               `json:"name"`
	Resources ResourceRequirements `json:"resources,omitzero"`
}

// ResourceRequirements holds a container's requests as quantities by
// resource name ("cpu": "250m").
type ResourceRequirements struct {
	Requests map[string]string `json:"requests,omitempty"`
}

// Node is the part of a core/v1 Node the sample uses.
type Node struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     NodeSpec   `json:"spec,omitzero"`
}

// NodeSpec is the part of a core/v1 NodeSpec the sample uses.
type NodeSpec struct {
	Unschedulable bool `json:"unschedulable,omitempty"`
}

// NodeList is a core/v1 NodeList.
type NodeList struct {
	Items []Node `json:"items"`
}

// Requests returns the sum of the pod's container requests of CPU, in
// millicores, and memory, in bytes.
func (p *Pod) Requests() (cpuMillis, memoryBytes int64, err error) {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests["cpu"]; ok {
			m, err := quantity.Millis(q)
			if err != nil {
				return 0, 0, fmt.Errorf("container %s: cpu request: %w", c.Name, err)
			}
			cpuMillis += m
		}
		if q, ok := c.Resources.Requests["memory"]; ok {
			b, err := quantity.Value(q)
			if err != nil {
				return 0, 0, fmt.Errorf("container %s: memory request: %w", c.Name, err)
			}
			memoryBytes += b
		}
	}
	return cpuMillis, memoryBytes, nil
}

// NewPod returns a pod with one container named main requesting cpuMillis
// and memoryBytes.
func NewPod(meta ObjectMeta, cpuMillis, memoryBytes int64) *Pod {
	return &Pod{Metadata: meta, Spec: PodSpec{Containers: []Container{{
		Name: "main",
		Resources: ResourceRequirements{Requests: map[string]string{
			"cpu":    quantity.FormatMillis(cpuMillis),
			"memory": quantity.FormatBytes(memoryBytes),
		}},
	}}}}
}

// DecodePod reads a Pod from its JSON.
func DecodePod(raw json.RawMessage) (*Pod, error) {
	var p Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	return &p, nil
}

// DecodeNodeList reads a NodeList from its JSON; JSON null or nothing is
// no list (nil).
func DecodeNodeList(raw json.RawMessage) (*NodeList, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var l NodeList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("node list: %w", err)
	}
	return &l, nil
}

// Names returns the names of the list's nodes, in order.
func (l *NodeList) Names() []string {
	names := make([]string, len(l.Items))
	for i, n := range l.Items {
		names[i] = n.Metadata.Name
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
		var n Node
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
