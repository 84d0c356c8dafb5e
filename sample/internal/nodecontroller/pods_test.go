package nodecontroller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// A pod bound at the node controller reaches the kubelet of its node,
// which runs it: the node controller holds it Pending, then Running, on
// that node. Binding it again to the same node changes nothing, to
// another node is conflict, to an unknown node not_found. A pod deleted
// gracefully is stopped by its kubelet and then goes; a pod that ends on
// its own goes too, and its kubelet stops running it.
func TestBoundPodsRunOnTheirNode(t *testing.T) {
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2"})
	k := runKubelet(t, kubelet.Config{API: "v2", Nodes: 3, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{url}}})
	require.Eventually(t, func() bool { return len(n.Health()) == 3 }, 5*time.Second, 10*time.Millisecond)
	c := nhv2.NewClient(frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{url}}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	binding := func(uid, node string) *nhv2.Binding {
		return &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: "pod-" + uid, UID: uid}, NodeName: node,
			Requests: nhv2.PodRequests{CPUMillis: 500, MemoryBytes: 1 << 30}}
	}

	res, err := c.Bind(ctx, binding("a", "node-001"))
	require.NoError(t, err)
	assert.Equal(t, "node-001", res.NodeName)
	_, err = c.Bind(ctx, binding("b", "node-002"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(map[string]string{"a": "node-001", "b": "node-002"}, running(n))
	}, 5*time.Second, 10*time.Millisecond, "each pod Running on its node, as its node's kubelet reported")
	assert.Equal(t, []string{"a"}, k.Running(1))
	assert.Equal(t, []string{"b"}, k.Running(2))
	assert.Empty(t, k.Running(0))
	assert.Zero(t, k.Stats().ForeignAssignments.Load(), "each node's watch selects its own pods: none was handed another node's")
	for _, p := range n.Pods() {
		var phases []nsv2.PodStatusPhase
		for _, ph := range p.Phases {
			phases = append(phases, ph.Phase)
		}
		assert.Equal(t, []nsv2.PodStatusPhase{"Pending", "Running"}, phases, p.UID)
	}
	for _, h := range n.Health() {
		if h.NodeName == "node-001" {
			assert.Equal(t, nhv2.Resources{CPUMillis: 3300, MemoryBytes: 14 << 30, Pods: 109}, h.Allocatable, "less pod a's requests")
		}
	}

	_, err = c.Bind(ctx, binding("a", "node-001"))
	assert.NoError(t, err, "the same binding again")
	_, err = c.Bind(ctx, binding("a", "node-002"))
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(err), "%v", err)
	_, err = c.Bind(ctx, binding("c", "node-999"))
	assert.Equal(t, framework.CodeNotFound, framework.CodeOf(err), "%v", err)
	_, err = c.Bind(ctx, &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: "x"}, NodeName: "node-001"})
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "no uid: %v", err)

	stopped := k.Stats().PodsStopped.Load()
	require.True(t, n.PodStore().Delete("a"))
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(map[string]string{"b": "node-002"}, running(n)) && len(n.Pods()) == 1 && len(k.Running(1)) == 0
	}, 5*time.Second, 10*time.Millisecond, "a was stopped by its kubelet, reported, and went")
	assert.Equal(t, stopped+1, k.Stats().PodsStopped.Load())
	assert.False(t, n.PodStore().Delete("a"), "a is gone")
	assert.Zero(t, k.Stats().Failed.Load())
}

// Pods that end on their own (a batch job's) are reported Succeeded; the
// node controller lets their assignment go and their node's resources
// free.
func TestEndedPodsGo(t *testing.T) {
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2"})
	k := runKubelet(t, kubelet.Config{API: "v2", Nodes: 1, ChangeEvery: 20 * time.Millisecond, PodsEnd: true,
		Client: framework.ClientConfig{Endpoints: []string{url}}})
	require.Eventually(t, func() bool { return len(n.Health()) == 1 }, 5*time.Second, 10*time.Millisecond)
	c := nhv2.NewClient(frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{url}}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, uid := range []string{"a", "b", "c"} {
		_, err := c.Bind(ctx, &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: uid, UID: uid}, NodeName: "node-000"})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(n.Pods()) == 0 && len(k.Running(0)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"every pod ended and went")
	assert.Equal(t, int64(110), n.Health()[0].Allocatable.Pods)
	assert.Equal(t, int64(3), k.Stats().PodsStarted.Load())
	assert.Zero(t, k.Stats().Failed.Load())
}
