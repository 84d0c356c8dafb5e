package nodecontroller_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	nhv1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
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
// free. The store's subscribers are told each went in its last phase, so
// a pod that ended before its Running was reported still shows it ran.
func TestEndedPodsGo(t *testing.T) {
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2"})
	var mu sync.Mutex
	last := map[string]*nodecontroller.Pod{}
	unsubscribe := n.PodStore().Subscribe(func(uid string, p *nodecontroller.Pod) {
		mu.Lock()
		defer mu.Unlock()
		last[uid] = p
	})
	defer unsubscribe()
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
	mu.Lock()
	for _, uid := range []string{"a", "b", "c"} {
		if p := last[uid]; assert.NotNil(t, p, "%s went as a pod in its last phase, not nil", uid) {
			assert.True(t, p.Ended(), "%s: %s", uid, p.Phase)
			assert.Equal(t, nsv2.PodStatusPhaseSucceeded, p.Phases[len(p.Phases)-1].Phase, "%s: its phases end with the report", uid)
		}
	}
	mu.Unlock()
	assert.Zero(t, k.Stats().Failed.Load())
}

// eventWait bounds a wait for an event (a node reported, pods running): it
// ends as soon as the event happens, and on a loaded machine the
// kubelet's informer and reports take seconds.
const eventWait = 20 * time.Second

// Evict unbinds pods of lower priority than the preemptor, at once, and
// binds the preemptor in their place: the victims' assignments go, their
// kubelet stops them and runs the preemptor. A victim of equal or higher
// priority, or bound to another node, is refused and nothing is evicted;
// evicting pods no longer bound changes nothing. A 1.0.0 scheduler
// evicts through the fork conversions alike.
func TestEvictUnbindsLowerPriorityPods(t *testing.T) {
	var evictions []nodecontroller.Eviction
	evicted := make(chan nodecontroller.Eviction, 4)
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", Fork: true, Evicted: func(e nodecontroller.Eviction) { evicted <- e }})
	k := runKubelet(t, kubelet.Config{API: "v2", Nodes: 2, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{url}}})
	require.Eventually(t, func() bool { return len(n.Health()) == 2 }, eventWait, 10*time.Millisecond)
	cc := framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{url}}
	c := nhv2.NewClient(frameworktest.NewClient(t, nhv2.Contract, cc))
	c1 := nhv1.NewClient(frameworktest.NewClient(t, nhv1.Contract, cc))
	ctx, cancel := context.WithTimeout(context.Background(), 3*eventWait)
	defer cancel()
	ref := func(uid string) nhv2.PodRef { return nhv2.PodRef{Namespace: "default", Name: "pod-" + uid, UID: uid} }
	for _, b := range []struct {
		uid, node string
		priority  int64
	}{{"low1", "node-000", 100}, {"low2", "node-000", 100}, {"mid", "node-000", 1000}, {"other", "node-001", 100}, {"low3", "node-000", 100}} {
		prio := b.priority
		_, err := c.Bind(ctx, &nhv2.Binding{Pod: ref(b.uid), NodeName: b.node, Priority: &prio, Requests: nhv2.PodRequests{CPUMillis: 800, MemoryBytes: 1 << 30}})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(k.Running(0)) == 4 && len(k.Running(1)) == 1 }, eventWait, 10*time.Millisecond)
	health := func(node string) nhv2.NodeHealth {
		for _, h := range n.Health() {
			if h.NodeName == node {
				return h
			}
		}
		t.Fatalf("no node %s", node)
		return nhv2.NodeHealth{}
	}
	require.Len(t, health("node-000").Pods, 4)
	assert.Equal(t, nhv2.BoundPod{Pod: ref("mid"), Priority: 1000, Requests: nhv2.PodRequests{CPUMillis: 800, MemoryBytes: 1 << 30}}, health("node-000").Pods[3])
	preemptor := func(priority int64) nhv2.Preemptor {
		return nhv2.Preemptor{Pod: ref("high"), Priority: priority, Requests: nhv2.PodRequests{CPUMillis: 2000, MemoryBytes: 1 << 30}}
	}

	// Refused, all or nothing.
	_, err := c.Evict(ctx, &nhv2.Eviction{NodeName: "node-000", Victims: []nhv2.PodRef{ref("low1"), ref("mid")}, Preemptor: preemptor(1000)})
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "mid has the preemptor's priority: %v", err)
	_, err = c.Evict(ctx, &nhv2.Eviction{NodeName: "node-000", Victims: []nhv2.PodRef{ref("low1"), ref("other")}, Preemptor: preemptor(10000)})
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(err), "other is bound to node-001: %v", err)
	_, err = c.Evict(ctx, &nhv2.Eviction{NodeName: "node-999", Victims: []nhv2.PodRef{ref("low1")}, Preemptor: preemptor(10000)})
	assert.Equal(t, framework.CodeNotFound, framework.CodeOf(err), "%v", err)
	assert.Len(t, n.Pods(), 5, "nothing was evicted, nor the preemptor bound")
	assert.Empty(t, evicted)

	before := health("node-000").Allocatable
	res, err := c.Evict(ctx, &nhv2.Eviction{NodeName: "node-000", Victims: []nhv2.PodRef{ref("low1"), ref("low2")}, Preemptor: preemptor(1000)})
	require.NoError(t, err)
	assert.Equal(t, []string{"low1", "low2"}, res.Evicted)
	evictions = append(evictions, <-evicted)
	assert.Equal(t, before.CPUMillis+1600-2000, health("node-000").Allocatable.CPUMillis, "what the victims requested went to the preemptor")
	assert.Equal(t, before.CPUMillis, evictions[0].Before.CPUMillis)
	assert.Equal(t, before.CPUMillis+1600, evictions[0].After.CPUMillis, "the room made")
	require.Len(t, evictions[0].Victims, 2)
	assert.Equal(t, int64(100), evictions[0].Victims[0].Priority)
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{"mid", "low3", "high"}, k.Running(0)) }, eventWait, 10*time.Millisecond,
		"the victims' kubelet stopped them, and runs the preemptor, bound in the same step")
	assert.Len(t, health("node-000").Pods, 3)
	_, err = c.Bind(ctx, &nhv2.Binding{Pod: ref("high"), NodeName: "node-000"})
	assert.NoError(t, err, "the scheduler's binding of the preemptor, after, changes nothing")
	_, err = c.Evict(ctx, &nhv2.Eviction{NodeName: "node-000", Victims: []nhv2.PodRef{ref("low3")},
		Preemptor: nhv2.Preemptor{Pod: ref("other"), Priority: 10000}})
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(err), "the preemptor is bound to node-001: %v", err)

	// Again: nothing left to evict.
	res, err = c.Evict(ctx, &nhv2.Eviction{NodeName: "node-000", Victims: []nhv2.PodRef{ref("low1")}, Preemptor: preemptor(1000)})
	require.NoError(t, err)
	assert.Empty(t, res.Evicted)

	// 1.0.0, through the fork conversions.
	res1, err := c1.Evict(ctx, &nhv1.Eviction{NodeName: "node-000", Victims: []nhv1.PodName{{Namespace: "default", Name: "pod-low3", UID: "low3"}},
		Preemptor: nhv1.BoundPod{Namespace: "default", Name: "pod-high", UID: "high", Priority: 1000, Requests: nhv1.ResourceList{"cpu": "1", "memory": "1Gi"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"low3"}, res1.Evicted)
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{"mid", "high"}, k.Running(0)) }, eventWait, 10*time.Millisecond)
	<-evicted
	assert.Zero(t, k.Stats().Failed.Load())
}

// A binding whose PodAssignment the topic cannot hold fails at the
// scheduler with the topic's resource_exhausted, over the wire, and the
// pod is not bound: the node controller does not hold it, nor does the
// store's file, and a binding of it once a key is free (a pod ended)
// succeeds.
func TestABindingTheTopicRefusesFails(t *testing.T) {
	ca := frameworktest.NewCA(t)
	file := filepath.Join(t.TempDir(), "pods.json")
	store, err := nodecontroller.OpenPodStore(file)
	require.NoError(t, err)
	n, url := startMTLS(t, ca, nodecontroller.Config{API: "v2", Pods: store, PodTopic: []framework.TopicOption{framework.WithMaxKeys(2)}})
	k := kubeletClient(t, ca, url, "node-a")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = k.ReportStatus(ctx, nodeStatus("node-a"))
	require.NoError(t, err)

	onA := pods("node-a", 3)
	errs := bind(ctx, schedulerClient(t, ca, url), onA)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(errs[2]), "the topic holds two keys: %v", errs[2])
	held := func() (uids []string) {
		for _, p := range n.Pods() {
			uids = append(uids, p.UID)
		}
		return uids
	}
	assert.ElementsMatch(t, []string{onA[0].UID, onA[1].UID}, held(), "the refused pod is not bound")
	var saved []nodecontroller.Pod
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &saved))
	var savedUIDs []string
	for _, p := range saved {
		savedUIDs = append(savedUIDs, p.UID)
	}
	assert.ElementsMatch(t, []string{onA[0].UID, onA[1].UID}, savedUIDs, "the store's file holds the bound pods, not the refused one")

	ended := *onA[0]
	ended.Phase = nsv2.PodStatusPhaseSucceeded
	results, err := k.ReportPodStatuses(ctx, []*nsv2.PodStatus{&ended})
	require.NoError(t, err)
	require.NoError(t, results[0].Err)
	require.NoError(t, bind(ctx, schedulerClient(t, ca, url), onA[2:])[0], "a key is free again")
	assert.ElementsMatch(t, []string{onA[1].UID, onA[2].UID}, held())
}
