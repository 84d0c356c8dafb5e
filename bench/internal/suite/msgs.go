package suite

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
)

// messages are the requests every variant sends, built once so that
// building them is not measured: call i sends index i%len of its set. Each
// set holds the same 64 nodes of the benchmark family (benchmsg.Node) in
// the types that system's users would hold them in.
type messages struct {
	// plain are the hand-written Go types, encoded by encoding/json (the
	// net/http, gRPC+JSON and etcd anchors).
	plain []*benchmsg.NodeStatus
	// generated are lockstep's generated types.
	generated []*benchgen.NodeStatus
	// proto are the protobuf types (gRPC and connect-go).
	proto []*benchpb.NodeStatus
}

func newMessages(n int) messages {
	var m messages
	for i := range n {
		node := benchmsg.Node(i)
		m.plain = append(m.plain, node)
		m.generated = append(m.generated, toGenerated(node))
		m.proto = append(m.proto, toProto(node))
	}
	return m
}

// toGenerated converts through the wire: the generated types decode the
// very bytes the hand-written ones encode.
func toGenerated(n *benchmsg.NodeStatus) *benchgen.NodeStatus {
	raw, err := json.Marshal(n)
	if err != nil {
		panic(err)
	}
	g := new(benchgen.NodeStatus)
	if err := json.Unmarshal(raw, g); err != nil {
		panic(fmt.Sprintf("suite: the benchmark node does not decode into the generated type: %v", err))
	}
	return g
}

func toProto(n *benchmsg.NodeStatus) *benchpb.NodeStatus {
	p := &benchpb.NodeStatus{
		NodeName: n.NodeName, Capacity: n.Capacity, Allocatable: n.Allocatable, Images: n.Images,
		NodeInfo: &benchpb.NodeSystemInfo{
			MachineId: n.NodeInfo.MachineID, SystemUuid: n.NodeInfo.SystemUUID, BootId: n.NodeInfo.BootID,
			KernelVersion: n.NodeInfo.KernelVersion, OsImage: n.NodeInfo.OSImage,
			ContainerRuntimeVersion: n.NodeInfo.ContainerRuntimeVersion,
			KubeletVersion:          n.NodeInfo.KubeletVersion, KubeProxyVersion: n.NodeInfo.KubeProxyVersion,
		},
	}
	for _, c := range n.Conditions {
		pc := &benchpb.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		if c.LastHeartbeatTime != nil {
			pc.LastHeartbeatTime = timestamppb.New(*c.LastHeartbeatTime)
		}
		p.Conditions = append(p.Conditions, pc)
	}
	for _, a := range n.Addresses {
		p.Addresses = append(p.Addresses, &benchpb.NodeAddress{Type: a.Type, Address: a.Address})
	}
	return p
}

// stamped returns node key of the family with its first condition's
// heartbeat time set to stamp: the fan-out workloads carry the write's
// time inside the object, so a watcher learns it only by decoding.
func stamped(key int, stamp time.Time) *benchmsg.NodeStatus {
	n := benchmsg.Node(key)
	n.Conditions[0].LastHeartbeatTime = &stamp
	return n
}
