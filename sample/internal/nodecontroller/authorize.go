package nodecontroller

import (
	"context"
	"encoding/json"

	"github.com/lockstep-dev/lockstep/framework"
	nsv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

// What one kubelet session may make the node controller store. A session
// is one simulated node (see package kubelet), so it reports one node; the
// bounds on sizes keep a hostile kubelet from storing megabytes per node.
const (
	// DefaultNodesPerSession bounds the nodes one kubelet session may
	// report.
	DefaultNodesPerSession = 1
	// DefaultPodsPerNode bounds the pods the node controller keeps for one
	// node; Kubernetes' own default is 110 pods per node.
	DefaultPodsPerNode = 1000
	// DefaultMaxStatusBytes and DefaultMaxPodBytes bound one node status and
	// one pod status as encoded.
	DefaultMaxStatusBytes = 32 << 10
	DefaultMaxPodBytes    = 4 << 10
)

// Authorize is the node controller's [framework.Authorizer], the idea of
// Kubernetes' Node authorizer: a node's status may be reported only by the
// kubelet session that reported it first, until that session is lost (its
// kubelet closed it, or it lapsed); a session may report at most
// NodesPerSession nodes; and it may report the status only of pods bound
// to its node, as the Node authorizer lets a kubelet update only the
// status of pods bound to it. Other entries are left to the framework's
// own checks (the contract's roles, the certificate's identity).
func (n *NodeController) Authorize(ctx context.Context, e *framework.Entry) error {
	if e.Kind != framework.EntryCall || e.Contract != nsv1.Contract.Name() {
		return nil
	}
	name, size := reportedNode(e.Request)
	if name == "" {
		return nil
	}
	limit := n.cfg.MaxStatusBytes
	if e.Method == "ReportPodStatuses" {
		limit = n.cfg.MaxPodBytes
	}
	if size > limit {
		return framework.Errorf(framework.CodeInvalidArgument, "a %s request of node %s is %d bytes encoded, at most %d allowed", e.Method, name, size, limit)
	}
	instance := e.Peer.Instance
	n.mu.Lock()
	defer n.mu.Unlock()
	if nd := n.nodes[name]; nd != nil && nd.boundTo != "" {
		if nd.boundTo != instance {
			return framework.Errorf(framework.CodePermissionDenied, "node %s is reported by another kubelet session", name)
		}
		return podBoundLocked(nd, e.Request)
	}
	if len(n.bound[instance]) >= n.cfg.NodesPerSession {
		return framework.Errorf(framework.CodePermissionDenied, "this kubelet session already reports %d node(s), at most %d allowed", len(n.bound[instance]), n.cfg.NodesPerSession)
	}
	nd := n.nodeLocked(name)
	n.bindLocked(nd, instance)
	return podBoundLocked(nd, e.Request)
}

// bindLocked binds a node to the kubelet session instance that may report
// it.
func (n *NodeController) bindLocked(nd *node, instance string) {
	nd.boundTo = instance
	if n.bound[instance] == nil {
		n.bound[instance] = map[string]bool{}
	}
	n.bound[instance][nd.name] = true
}

// podBoundLocked refuses the status of a pod not bound to nd.
func podBoundLocked(nd *node, req any) error {
	var uid string
	switch r := req.(type) {
	case *nsv2.PodStatus:
		uid = r.UID
	case *nsv1.PodStatus:
		uid = r.UID
	default:
		return nil
	}
	if _, ok := nd.assigned[uid]; !ok {
		return framework.Errorf(framework.CodePermissionDenied, "pod %s is not bound to node %s", uid, nd.name)
	}
	return nil
}

// unbindLocked releases the nodes a lost kubelet session reported, so the
// kubelet's next session (after a restart) may report them.
func (n *NodeController) unbindLocked(instance string) {
	for name := range n.bound[instance] {
		if nd := n.nodes[name]; nd != nil && nd.boundTo == instance {
			nd.boundTo = ""
		}
	}
	delete(n.bound, instance)
}

// reportedNode returns the node a nodestatus request reports and its
// encoded size, or "" for another message.
func reportedNode(req any) (string, int) {
	var name string
	switch r := req.(type) {
	case *nsv2.NodeStatus:
		name = r.NodeName
	case *nsv2.PodStatus:
		name = r.NodeName
	case *nsv1.NodeStatus:
		name = r.NodeName
	case *nsv1.PodStatus:
		name = r.NodeName
	default:
		return "", 0
	}
	b, err := json.Marshal(req)
	if err != nil {
		return name, 0
	}
	return name, len(b)
}
