package nodecontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

// withNodes is a node controller, not serving, that knows nodes Ready
// nodes, node-0 … node-(nodes-1), as their kubelets' reports made them.
func withNodes(tb testing.TB, nodes, podsPerNode int) *NodeController {
	tb.Helper()
	quiet := slog.New(slog.DiscardHandler)
	n, err := New(Config{API: "v2", Logger: quiet, PodsPerNode: podsPerNode,
		Server: framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: quiet}})
	require.NoError(tb, err)
	tb.Cleanup(n.Close)
	for i := range nodes {
		st := &nsv2.NodeStatus{NodeName: fmt.Sprintf("node-%d", i),
			Allocatable: nsv2.Resources{CPUMillis: 4000, MemoryBytes: 16 << 30, Pods: 110},
			Conditions:  nsv2.Conditions{Ready: nsv2.Condition{Status: nsv2.ConditionStatusTrue}}}
		_, err := n.reportStatus(context.Background(), st)
		require.NoError(tb, err)
	}
	return n
}

func binding(uid, node string) *nhv2.Binding {
	return &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: uid, UID: uid}, NodeName: node,
		Requests: nhv2.PodRequests{CPUMillis: 10, MemoryBytes: 16 << 20}}
}

// A node's limit of pods counts the pods bound to it now: pods that ended
// and pods evicted free their places, and other nodes' pods take none.
func TestPodLimitCountsTheNodesPods(t *testing.T) {
	n := withNodes(t, 3, 2)
	ctx := context.Background()
	for _, b := range []*nhv2.Binding{binding("a", "node-0"), binding("b", "node-0"), binding("c", "node-1"), binding("d", "node-1")} {
		_, err := n.bind(ctx, b)
		require.NoError(t, err)
	}
	_, err := n.bind(ctx, binding("e", "node-0"))
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err), "node-0 holds 2 of 2: %v", err)
	_, err = n.bind(ctx, binding("e", "node-2"))
	assert.NoError(t, err, "node-2 holds none of the others' pods")

	require.NoError(t, n.cfg.Pods.report(&nsv2.PodStatus{NodeName: "node-0", UID: "a", Phase: nsv2.PodStatusPhaseSucceeded}))
	_, err = n.bind(ctx, binding("f", "node-0"))
	assert.NoError(t, err, "a ended: its place is free")
	_, err = n.bind(ctx, binding("g", "node-0"))
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err), "%v", err)

	prio := int64(10)
	_, err = n.evict(ctx, &nhv2.Eviction{NodeName: "node-1", Victims: []nhv2.PodRef{{UID: "c"}},
		Preemptor: nhv2.Preemptor{Pod: nhv2.PodRef{Namespace: "default", Name: "h", UID: "h"}, Priority: prio}})
	require.NoError(t, err)
	_, err = n.bind(ctx, binding("i", "node-1"))
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err), "c's place went to h: %v", err)

	// Each node's health lists its own pods, and only those.
	pods := map[string][]string{}
	for _, h := range n.Health() {
		for _, p := range h.Pods {
			pods[h.NodeName] = append(pods[h.NodeName], p.Pod.UID)
		}
	}
	assert.Equal(t, map[string][]string{"node-0": {"b", "f"}, "node-1": {"d", "h"}, "node-2": {"e"}}, pods)
}

// A binding a subscriber refuses is never in the store's file, not even
// for the moment before the refusal: the file is written once every
// subscriber took the pod. The refusal comes back with its code, and in
// the error's chain.
func TestARefusedBindingIsNeverSaved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.json")
	s, err := OpenPodStore(path)
	require.NoError(t, err)
	full := framework.Errorf(framework.CodeResourceExhausted, "the topic holds its bound of keys")
	var inFile []bool // for each refusal, whether the file held the pod as it was refused
	cancel := s.subscribe(func(uid string, p *Pod) error {
		if p == nil || uid != "refused" {
			return nil
		}
		inFile = append(inFile, slices.Contains(savedUIDs(t, path), uid))
		return full
	})
	defer cancel()

	_, err = s.bind(binding("kept", "node-0"), 10)
	require.NoError(t, err)
	_, err = s.bind(binding("refused", "node-0"), 10)
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err), "%v", err)
	assert.ErrorIs(t, err, full, "the refusal is in the error's chain")
	assert.Equal(t, []bool{false}, inFile, "the file did not hold the pod when it was refused")
	assert.Equal(t, []string{"kept"}, savedUIDs(t, path), "nor after")
	assert.Len(t, s.Pods(), 1, "the store does not hold it")
}

// savedUIDs is the uids of the pods the store's file at path holds.
func savedUIDs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var pods []*Pod
	require.NoError(t, json.Unmarshal(b, &pods))
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	slices.Sort(uids)
	return uids
}

// BenchmarkBind is one binding's cost in the node controller (the pod
// store, the node's health and the PodAssignment topic, without the
// network), and its pod's end, with nodes nodes holding 5 pods each
// already: it should not grow with the number of nodes.
func BenchmarkBind(b *testing.B) {
	for _, nodes := range []int{1000, 2000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			n := withNodes(b, nodes, 1000)
			ctx := context.Background()
			for i := range 5 * nodes {
				if _, err := n.bind(ctx, binding(fmt.Sprintf("pod-%d", i), fmt.Sprintf("node-%d", i%nodes))); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				uid, node := fmt.Sprintf("new-%d", i), fmt.Sprintf("node-%d", i%nodes)
				if _, err := n.bind(ctx, binding(uid, node)); err != nil {
					b.Fatal(err)
				}
				if err := n.cfg.Pods.report(&nsv2.PodStatus{NodeName: node, UID: uid, Phase: nsv2.PodStatusPhaseSucceeded}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// A pod's phase, as its kubelet reports it, is not in its PodAssignment:
// the report does not publish the assignment again (each publication is
// an event on the kubelet's watch), while what does change it (a graceful
// delete's Stopped, the pod's end) is published.
func TestAPodsPhaseDoesNotPublishItsAssignmentAgain(t *testing.T) {
	n := withNodes(t, 1, 10)
	ctx := context.Background()
	_, err := n.bind(ctx, binding("a", "node-0"))
	require.NoError(t, err)
	bound, ok := n.podsV2.Version("a")
	require.True(t, ok, "the binding is published")

	require.NoError(t, n.cfg.Pods.report(&nsv2.PodStatus{NodeName: "node-0", UID: "a", Phase: nsv2.PodStatusPhaseRunning}))
	running, ok := n.podsV2.Version("a")
	require.True(t, ok)
	assert.Equal(t, bound, running, "Running changed nothing the kubelet watches")
	assert.Equal(t, nsv2.PodStatusPhaseRunning, n.Pods()[0].Phase, "the store holds the phase")

	require.True(t, n.cfg.Pods.Delete("a"))
	stopping, ok := n.podsV2.Version("a")
	require.True(t, ok)
	assert.NotEqual(t, running, stopping, "the desired state Stopped is published")
	a, _ := n.podsV2.Get("a")
	assert.Equal(t, nsv2.PodAssignmentDesiredStateStopped, a.DesiredState)

	require.NoError(t, n.cfg.Pods.report(&nsv2.PodStatus{NodeName: "node-0", UID: "a", Phase: nsv2.PodStatusPhaseSucceeded}))
	_, ok = n.podsV2.Version("a")
	assert.False(t, ok, "the ended pod's assignment is deleted")
	assert.Empty(t, n.Health()[0].Pods, "and it left its node")
}

// PodTopic bounds the PodAssignment topic: with room for two keys, a
// third pod's binding is refused with the topic's resource_exhausted and
// the pod is not bound (not in the store, not on its node), until a key
// is free again; without it, the default bound holds them all.
func TestPodTopicBoundsTheAssignments(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	n, err := New(Config{API: "v2", Logger: quiet, PodsPerNode: 10, PodTopic: []framework.TopicOption{framework.WithMaxKeys(2)},
		Server: framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: quiet}})
	require.NoError(t, err)
	t.Cleanup(n.Close)
	st := &nsv2.NodeStatus{NodeName: "node-0", Allocatable: nsv2.Resources{CPUMillis: 4000, MemoryBytes: 16 << 30, Pods: 110},
		Conditions: nsv2.Conditions{Ready: nsv2.Condition{Status: nsv2.ConditionStatusTrue}}}
	_, err = n.reportStatus(context.Background(), st)
	require.NoError(t, err)

	ctx := context.Background()
	m := withNodes(t, 1, 10)
	for _, uid := range []string{"a", "b", "c"} {
		_, err = m.bind(ctx, binding(uid, "node-0"))
		require.NoError(t, err)
	}
	assert.Equal(t, 3, m.podsV2.Len(), "the default bound holds all three")

	for _, uid := range []string{"a", "b"} {
		_, err = n.bind(ctx, binding(uid, "node-0"))
		require.NoError(t, err)
	}
	_, err = n.bind(ctx, binding("c", "node-0"))
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err), "the topic holds two keys: %v", err)
	assert.Equal(t, 2, n.podsV2.Len(), "WithMaxKeys(2) holds two assignments")
	uids := func() (out []string) {
		for _, p := range n.Pods() {
			out = append(out, p.UID)
		}
		return out
	}
	assert.Equal(t, []string{"a", "b"}, uids(), "c is not bound")
	require.Len(t, n.Health(), 1)
	assert.Len(t, n.Health()[0].Pods, 2, "nor on its node")
	assert.Equal(t, int64(108), n.Health()[0].Allocatable.Pods, "of 110, the node's allocatable leaves out a and b only")

	require.NoError(t, n.cfg.Pods.report(&nsv2.PodStatus{NodeName: "node-0", UID: "a", Phase: nsv2.PodStatusPhaseSucceeded}))
	_, err = n.bind(ctx, binding("c", "node-0"))
	require.NoError(t, err, "a ended: its key is free")
	assert.Equal(t, []string{"b", "c"}, uids())
	_, ok := n.podsV2.Get("c")
	assert.True(t, ok, "c's assignment is published")
}
