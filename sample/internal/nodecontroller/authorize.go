package nodecontroller

import (
	"context"
	"encoding/json"
	"strings"

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
// Kubernetes' Node authorizer, which lets the credentials of
// system:node:<name> update the Node <name> and nothing else:
//
//   - Under mutual TLS a node belongs to one kubelet identity, named by
//     the certificate: lockstep://kubelet/<node> reports the node <node>
//     and no other, and a node simulator's identity reports the nodes of
//     the prefix Config.NodeSets grants it, which no other identity may
//     report. Ownership is the certificate's, not a session's: it is the
//     same after the kubelet restarts (its new session reports at once, the
//     node moves to it from the old one), and nobody can take it by
//     reporting first or while the kubelet is away. A certificate without a
//     name (lockstep://kubelet, or a common name only) reports no node.
//   - Without mutual TLS there is no identity to bind a node to: a node's
//     status may be reported only by the kubelet session that reported it
//     first, until that session is lost (its kubelet closed it, or it
//     lapsed). This keeps honest kubelets apart, not an attacker.
//
// Either way a session reports at most NodesPerSession nodes, and only
// the status of pods bound to its node, as the Node authorizer lets a
// kubelet update only the status of pods bound to it. Other entries are
// left to the framework's own checks (the contract's roles, the
// certificate's identity).
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
	if e.Peer.Authenticated {
		if err := n.owns(e.Peer.Identity, name); err != nil {
			return err
		}
	}
	instance := e.Peer.Instance
	n.mu.Lock()
	defer n.mu.Unlock()
	if nd := n.nodes[name]; nd != nil && nd.boundTo != "" {
		if nd.boundTo == instance {
			return podBoundLocked(nd, e.Request)
		}
		if !e.Peer.Authenticated {
			return framework.Errorf(framework.CodePermissionDenied, "node %s is reported by another kubelet session", name)
		}
		// Another session of the node's own identity: the kubelet
		// restarted, and its new session takes the node over.
	}
	if len(n.bound[instance]) >= n.cfg.NodesPerSession {
		return framework.Errorf(framework.CodePermissionDenied, "this kubelet session already reports %d node(s), at most %d allowed", len(n.bound[instance]), n.cfg.NodesPerSession)
	}
	nd := n.nodeLocked(name)
	n.bindLocked(nd, instance)
	return podBoundLocked(nd, e.Request)
}

// owns says whether the kubelet identity id may report node: its
// certificate names the node, or Config.NodeSets grants it the node's
// prefix. The longest granted prefix a node name begins with decides its
// owner, so a node has exactly one.
func (n *NodeController) owns(id framework.Identity, node string) error {
	owner, set := node, ""
	for name, prefix := range n.cfg.NodeSets {
		if strings.HasPrefix(node, prefix) && len(prefix) > len(set) {
			owner, set = name, prefix
		}
	}
	switch {
	case id.Name == owner:
		return nil
	case id.Name == "":
		return framework.Errorf(framework.CodePermissionDenied,
			"%s names no node, so it may report none: a kubelet's certificate names its node, lockstep://%s/%s", id, id.Component, node)
	case set != "":
		return framework.Errorf(framework.CodePermissionDenied,
			"node %s is one of the nodes %s… granted to lockstep://%s/%s, not to %s", node, set, id.Component, owner, id)
	}
	return framework.Errorf(framework.CodePermissionDenied,
		"node %s belongs to lockstep://%s/%s, not to %s", node, id.Component, node, id)
}

// bindLocked binds a node to the kubelet session instance that may report
// it, taking it from the session that reported it before, if any.
func (n *NodeController) bindLocked(nd *node, instance string) {
	if old := nd.boundTo; old != "" && old != instance {
		delete(n.bound[old], nd.name)
		if len(n.bound[old]) == 0 {
			delete(n.bound, old)
		}
	}
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
