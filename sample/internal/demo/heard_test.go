package demo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"
	nhv1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	nsv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
)

// nodes-stay-known breaks for a node marked Unknown less than the grace
// period after a replica last heard its kubelet, or that no replica ever
// heard; it holds for a node whose kubelet no replica heard for the grace
// period, and a kubelet heard again after the verdict does not change it.
func TestNodesStayKnownCatchesNodesLostWhileTheirKubeletWasHeard(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	session := func(instance string, idle time.Duration) framework.SessionInfo {
		return framework.SessionInfo{Contract: nsv1.Contract.Name(), Peer: handshake.Peer{Instance: instance}, Idle: idle}
	}
	h := newHeardWatch(3 * time.Second)
	// Two replicas' servers: node-000's kubelet last heard at t0 by the
	// second, node-001's at t0+2.5s; a scheduler's session is no node's.
	h.sample(t0.Add(200*time.Millisecond), [][]framework.SessionInfo{
		{session("node-000.k1", time.Second), {Contract: nhv1.Contract.Name(), Peer: handshake.Peer{Instance: "node-009.s"}}},
		{session("node-000.k1", 200*time.Millisecond)},
	})
	h.sample(t0.Add(2600*time.Millisecond), [][]framework.SessionInfo{{session("node-001.k1", 100*time.Millisecond)}})
	// Heard again after the verdicts below.
	h.sample(t0.Add(5*time.Second), [][]framework.SessionInfo{{session("node-000.k2", 0), session("node-001.k2", 0)}})

	err := h.check(map[string]time.Time{"node-001": t0.Add(3200 * time.Millisecond)})
	require.Error(t, err, "node-001's kubelet was heard 700ms before the verdict")
	assert.Contains(t, err.Error(), "node-001 became Unknown 700ms after a replica last heard its kubelet (grace 3s)")

	err = h.check(map[string]time.Time{"node-009": t0.Add(4 * time.Second)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no replica had heard its kubelet")

	assert.NoError(t, h.check(map[string]time.Time{"node-000": t0.Add(3200 * time.Millisecond)}),
		"node-000's kubelet was unheard for 3.2s, longer than the grace period")
	assert.Equal(t, "nodes marked Unknown: 1 time(s), each after no replica had heard the node's kubelet for the grace period (3s; longest silence 3.2s)",
		h.outcome())
	assert.Equal(t, "node-000", nodeOfInstance("node-000.74613483"))
}
