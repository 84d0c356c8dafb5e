// Package benchmsg is the benchmark message of the project (a Kubernetes-like
// NodeStatus answered by an Ack) as a contract described in Go by hand, with
// hand-written types. The framework's tests and benchmarks and the comparison
// suite (the nested module bench/) use it, so every suite measures the very
// same bytes; it lives outside internal/ so that the bench module can import
// it, and is no API with compatibility promises.
package benchmsg

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

//go:embed nodestatus.schema.json
var nodeStatusSchema []byte

//go:embed ack.schema.json
var ackSchema []byte

//go:embed nodestatus.json
var nodeStatusInstance []byte

// Contract returns the benchmark contract "bench" at a version: server
// nodecontroller, client kubelet, method ReportStatus (NodeStatus → Ack) and
// the batch method ReportStatuses. Versions differ only in their number, so
// two of them never agree.
func Contract(version string) handshake.Contract {
	return handshake.Contract{
		Name: "bench", Version: version, Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{
			"ReportStatus":   {Request: "NodeStatus", Response: "Ack"},
			"ReportStatuses": {Request: "NodeStatus", Response: "Ack", Batch: true},
		},
		Topics:  map[string]handshake.Topic{},
		Schemas: map[string]json.RawMessage{"NodeStatus": nodeStatusSchema, "Ack": ackSchema},
	}
}

// NodeStatus is the benchmark request.
type NodeStatus struct {
	NodeName    string            `json:"nodeName"`
	Conditions  []NodeCondition   `json:"conditions"`
	Capacity    map[string]string `json:"capacity"`
	Allocatable map[string]string `json:"allocatable"`
	Addresses   []NodeAddress     `json:"addresses"`
	NodeInfo    NodeSystemInfo    `json:"nodeInfo"`
	Images      []string          `json:"images"`
}

// NodeCondition is one condition of a node.
type NodeCondition struct {
	Type              string     `json:"type"`
	Status            string     `json:"status"`
	Reason            string     `json:"reason,omitempty"`
	Message           string     `json:"message,omitempty"`
	LastHeartbeatTime *time.Time `json:"lastHeartbeatTime,omitempty"`
}

// NodeAddress is one address of a node.
type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// NodeSystemInfo is a node's version strings.
type NodeSystemInfo struct {
	MachineID               string `json:"machineID,omitempty"`
	SystemUUID              string `json:"systemUUID,omitempty"`
	BootID                  string `json:"bootID,omitempty"`
	KernelVersion           string `json:"kernelVersion,omitempty"`
	OSImage                 string `json:"osImage,omitempty"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion,omitempty"`
	KubeletVersion          string `json:"kubeletVersion,omitempty"`
	KubeProxyVersion        string `json:"kubeProxyVersion,omitempty"`
}

// Ack is the benchmark answer.
type Ack struct {
	Accepted   bool  `json:"accepted"`
	Generation int64 `json:"generation"`
}

// Node returns node n of the deterministic family: the shared instance
// (node 7) with its name and InternalIP varied.
func Node(n int) *NodeStatus {
	var s NodeStatus
	if err := json.Unmarshal(nodeStatusInstance, &s); err != nil {
		panic("benchmsg: the embedded instance does not decode: " + err.Error())
	}
	s.NodeName = fmt.Sprintf("node-%04d", n)
	for i := range s.Addresses {
		if s.Addresses[i].Type == "InternalIP" {
			s.Addresses[i].Address = fmt.Sprintf("10.0.%d.%d", n/256%256, n%256)
		}
	}
	return &s
}

// InstanceJSON returns the shared instance's bytes.
func InstanceJSON() []byte { return append([]byte(nil), nodeStatusInstance...) }
