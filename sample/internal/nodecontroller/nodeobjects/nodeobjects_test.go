package nodeobjects_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/kubernetes/typed/core/v1/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller/nodeobjects"
)

// nodeClient is a Node client over an in-memory object tracker, which
// applies creates and strategic merge patches as the API server does.
func nodeClient(t *testing.T) corev1client.NodeInterface {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	tracker := clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	f := &clienttesting.Fake{}
	f.AddReactor("*", "*", clienttesting.ObjectReaction(tracker))
	return (&fake.FakeCoreV1{Fake: f}).Nodes()
}

func healthOf(name string, ready nhv2.NodeConditionStatus) *nhv2.NodeHealth {
	state := nhv2.NodeHealthStateReady
	if ready == nhv2.NodeConditionStatusUnknown {
		state = nhv2.NodeHealthStateUnknown
	}
	return &nhv2.NodeHealth{NodeName: name, State: state, Labels: map[string]string{"kubernetes.io/hostname": name},
		Allocatable: nhv2.Resources{CPUMillis: 3000, MemoryBytes: 1 << 30, Pods: 100},
		Capacity:    &nhv2.Resources{CPUMillis: 4000, MemoryBytes: 2 << 30, Pods: 110},
		Pods:        []nhv2.BoundPod{{Pod: nhv2.PodRef{Name: "p", UID: "u"}, Requests: nhv2.PodRequests{CPUMillis: 800}}},
		Conditions:  []nhv2.NodeCondition{{Type: nhv2.NodeConditionTypeReady, Status: ready}}}
}

type run struct {
	w      *nodeobjects.Writer
	nodes  corev1client.NodeInterface
	clock  *clockwork.FakeClock
	cancel context.CancelFunc
}

func start(t *testing.T, rate float64, refresh time.Duration) *run {
	t.Helper()
	r := &run{nodes: nodeClient(t), clock: clockwork.NewFakeClock()}
	var err error
	r.w, err = nodeobjects.New(nodeobjects.Config{Nodes: r.nodes, MaxWritesPerSecond: rate, RefreshEvery: refresh, Clock: r.clock,
		Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.w.Run(ctx) }()
	r.cancel = cancel
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *run) ready(t *testing.T, name string) corev1.NodeCondition {
	t.Helper()
	n, err := r.nodes.Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	t.Fatalf("node %s has no Ready condition", name)
	return corev1.NodeCondition{}
}

// Writes of every kind come out of one budget with bursts of a second's
// worth: 20 new nodes at 5 writes per second are created 5 at a time as
// the clock moves on, and a long pause buys no more than a second's writes.
func TestWritesStayWithinTheBudget(t *testing.T) {
	r := start(t, 5, time.Hour)
	for i := range 20 {
		r.w.Observe(healthOf(fmt.Sprintf("node-%02d", i), nhv2.NodeConditionStatusTrue))
	}
	creates := func() int64 { return r.w.Stats().Creates.Load() }
	require.Eventually(t, func() bool { return creates() >= 5 }, 10*time.Second, time.Millisecond)
	assert.EqualValues(t, 5, creates(), "a second's budget, no more, until the clock moves")
	r.clock.Advance(time.Second)
	require.Eventually(t, func() bool { return creates() >= 10 }, 10*time.Second, time.Millisecond)
	assert.EqualValues(t, 10, creates())
	r.clock.Advance(10 * time.Second)
	require.Eventually(t, func() bool { return creates() >= 15 }, 10*time.Second, time.Millisecond)
	assert.EqualValues(t, 15, creates(), "ten seconds idle buy one second's burst")
	assert.Equal(t, 5, r.w.Pending())
	r.clock.Advance(time.Second)
	require.Eventually(t, func() bool { return creates() == 20 && r.w.Pending() == 0 }, 10*time.Second, time.Millisecond)

	n, err := r.nodes.Get(context.Background(), "node-07", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "node-07", n.Labels["kubernetes.io/hostname"])
	assert.Equal(t, "4", n.Status.Capacity.Cpu().String())
	assert.Equal(t, "3800m", n.Status.Allocatable.Cpu().String(), "what is left plus what its pods requested")
	assert.Equal(t, corev1.ConditionTrue, r.ready(t, "node-07").Status)
	assert.Zero(t, r.w.Stats().Transitions.Load()+r.w.Stats().Refreshes.Load()+r.w.Stats().Failures.Load())
}

// A Ready transition is written before any refresh, and only the node that
// changed is written; unchanged nodes are rewritten once per refresh period.
func TestTransitionsThenRefresh(t *testing.T) {
	const nodes = 50
	refresh := 5 * time.Minute
	r := start(t, 1000, refresh)
	for i := range nodes {
		r.w.Observe(healthOf(fmt.Sprintf("node-%02d", i), nhv2.NodeConditionStatusTrue))
	}
	st := r.w.Stats()
	require.Eventually(t, func() bool { return st.Creates.Load() == nodes && r.w.Pending() == 0 }, 10*time.Second, time.Millisecond)
	created := r.ready(t, "node-03").LastHeartbeatTime

	r.clock.Advance(time.Second)
	r.w.Observe(healthOf("node-03", nhv2.NodeConditionStatusUnknown))
	require.Eventually(t, func() bool { return st.Transitions.Load() == 1 && r.w.Pending() == 0 }, 10*time.Second, time.Millisecond)
	c := r.ready(t, "node-03")
	assert.Equal(t, corev1.ConditionUnknown, c.Status)
	assert.Equal(t, r.clock.Now().Unix(), c.LastTransitionTime.Unix())
	assert.Zero(t, st.Refreshes.Load(), "no node is due for its refresh yet")
	assert.Equal(t, created, r.ready(t, "node-04").LastHeartbeatTime, "the others are not written")

	// Every node's first refresh comes between half the period and the
	// whole of it after its creation, then once per period.
	r.clock.Advance(refresh)
	require.Eventually(t, func() bool { return st.Refreshes.Load() == nodes }, 10*time.Second, time.Millisecond)
	assert.Equal(t, r.clock.Now().Unix(), r.ready(t, "node-04").LastHeartbeatTime.Unix())
	assert.Equal(t, corev1.ConditionUnknown, r.ready(t, "node-03").Status)
	r.clock.Advance(refresh)
	require.Eventually(t, func() bool { return st.Refreshes.Load() == 2*nodes }, 10*time.Second, time.Millisecond)
	assert.EqualValues(t, 1, st.Transitions.Load())
	assert.Zero(t, st.Failures.Load())
}

func TestNeedsAClient(t *testing.T) {
	_, err := nodeobjects.New(nodeobjects.Config{})
	assert.ErrorContains(t, err, "no Node client")
}
