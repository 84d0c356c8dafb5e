// Package topicmsg is a contract with topics, described in Go by hand with
// hand-written types, for the framework's topic and watch tests and
// benchmarks. It declares one topic of each kind the runtime must handle:
// written by the server, and written by the client with either lost-writer
// policy, plus the benchmark NodeStatus published as a topic.
package topicmsg

import (
	"encoding/json"

	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Topic names of the contract.
const (
	// TopicNodeHealth is written by the server (nodecontroller), keyed by
	// node; a lost writer's keys are deleted.
	TopicNodeHealth = "NodeHealth"
	// TopicLease is written by clients (kubelets), keyed by node; a lost
	// writer's keys are deleted.
	TopicLease = "Lease"
	// TopicCapacity is written by clients, keyed by node; a lost writer's
	// keys are kept.
	TopicCapacity = "Capacity"
	// TopicNodeStatus publishes the benchmark NodeStatus from the server,
	// keyed by nodeName.
	TopicNodeStatus = "NodeStatus"
	// TopicAssignment is written by the server, keyed by pod uid; a
	// watcher selects the pods of one node (selector node) or of one
	// phase (selector phase).
	TopicAssignment = "Assignment"
)

const nodeHealthSchema = `{
  "type": "object",
  "required": ["node", "ready"],
  "additionalProperties": false,
  "properties": {
    "node": {"type": "string", "minLength": 1},
    "ready": {"type": "boolean"},
    "score": {"type": "integer", "minimum": 0, "maximum": 100},
    "reason": {"type": "string"},
    "stamp": {"type": "integer"},
    "padding": {"type": "string"}
  }
}`

const leaseSchema = `{
  "type": "object",
  "required": ["node", "renewals"],
  "additionalProperties": false,
  "properties": {
    "node": {"type": "string", "minLength": 1},
    "renewals": {"type": "integer", "minimum": 0},
    "padding": {"type": "string"}
  }
}`

const capacitySchema = `{
  "type": "object",
  "required": ["node", "pods"],
  "additionalProperties": false,
  "properties": {
    "node": {"type": "string", "minLength": 1},
    "pods": {"type": "integer", "minimum": 0}
  }
}`

const assignmentSchema = `{
  "type": "object",
  "required": ["uid"],
  "additionalProperties": false,
  "properties": {
    "uid": {"type": "string", "minLength": 1},
    "node": {"type": "string"},
    "phase": {"type": "string"},
    "gen": {"type": "integer"},
    "stamp": {"type": "integer"},
    "padding": {"type": "string"}
  }
}`

// Contract returns the contract "topics" at a version: server
// nodecontroller, client kubelet, no methods, and the four topics above.
func Contract(version string) handshake.Contract {
	return handshake.Contract{
		Name: "topics", Version: version, Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{},
		Topics: map[string]handshake.Topic{
			TopicNodeHealth: {Object: "NodeHealth", Key: "node", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
			TopicLease:      {Object: "Lease", Key: "node", Writer: handshake.RoleClient, LostWriter: handshake.LostWriterDelete},
			TopicCapacity:   {Object: "Capacity", Key: "node", Writer: handshake.RoleClient, LostWriter: handshake.LostWriterKeep},
			TopicNodeStatus: {Object: "NodeStatus", Key: "nodeName", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
			TopicAssignment: {Object: "Assignment", Key: "uid", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete,
				Selectors: []string{"node", "phase"}},
		},
		Schemas: map[string]json.RawMessage{
			"NodeHealth": json.RawMessage(nodeHealthSchema),
			"Lease":      json.RawMessage(leaseSchema),
			"Capacity":   json.RawMessage(capacitySchema),
			"NodeStatus": benchmsg.Contract(version).Schemas["NodeStatus"],
			"Assignment": json.RawMessage(assignmentSchema),
		},
	}
}

// NodeHealth is the object of the NodeHealth topic: the processed,
// user-visible health of one node.
type NodeHealth struct {
	Node   string `json:"node"`
	Ready  bool   `json:"ready"`
	Score  int64  `json:"score,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Stamp is the writer's clock, in nanoseconds, when it wrote the
	// object; benchmarks in one process measure delivery with it.
	Stamp int64 `json:"stamp,omitempty"`
	// Padding makes objects as large as a test needs.
	Padding string `json:"padding,omitempty"`
}

// Lease is the object of the Lease topic: a node agent's proof of life.
type Lease struct {
	Node     string `json:"node"`
	Renewals int64  `json:"renewals"`
	Padding  string `json:"padding,omitempty"`
}

// Capacity is the object of the Capacity topic: what a node can hold.
type Capacity struct {
	Node string `json:"node"`
	Pods int64  `json:"pods"`
}

// Assignment is the object of the Assignment topic: a pod and the node it
// is bound to ("" while unbound).
type Assignment struct {
	UID   string `json:"uid"`
	Node  string `json:"node,omitempty"`
	Phase string `json:"phase,omitempty"`
	Gen   int64  `json:"gen,omitempty"`
	// Stamp is the writer's clock, in nanoseconds, when it wrote the
	// object: benchmarks in one process measure delivery with it.
	Stamp   int64  `json:"stamp,omitempty"`
	Padding string `json:"padding,omitempty"`
}
