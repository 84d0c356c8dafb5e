package suite

import (
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/handshake"
)

// topicName is the fan-out topic: the benchmark NodeStatus, keyed by node
// name, written by the server. idleTopic is the same with one key, which
// the idle-watcher workload's watchers hold.
const (
	topicName = "NodeStatus"
	idleTopic = "IdleNodeStatus"
)

// watchObject is what watchers decode every change into: lockstep's
// generated NodeStatus.
type watchObject = benchgen.NodeStatus

// topicContract is the benchmark contract's messages with one topic
// publishing NodeStatus, for the fan-out and idle-watcher workloads.
var topicContract = func() *framework.Contract {
	m := benchgen.Contract.Model()
	m.Name = "benchwatch"
	m.Methods = map[string]handshake.Method{}
	m.Topics = map[string]handshake.Topic{
		topicName: {Object: "NodeStatus", Key: "nodeName", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
		idleTopic: {Object: "NodeStatus", Key: "nodeName", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
	}
	return framework.MustContract(m)
}()

// watchObjectOf is node key of the benchmark family stamped with t.
func watchObjectOf(key int, t time.Time) *watchObject { return toGenerated(stamped(key, t)) }

// stampOf is the write time a watcher reads from a decoded object.
func stampOf(n *watchObject) time.Time {
	if len(n.Conditions) == 0 || n.Conditions[0].LastHeartbeatTime == nil {
		return time.Time{}
	}
	return *n.Conditions[0].LastHeartbeatTime
}
