package nodecontroller_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	nhv1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// start serves a node controller on addr ("127.0.0.1:0" for any port)
// until the test ends or stop is called.
func start(t *testing.T, addr string, cfg nodecontroller.Config) (n *nodecontroller.NodeController, url string, stop func()) {
	t.Helper()
	cfg.Server = framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: time.Second,
		Heartbeat: 50 * time.Millisecond, DrainTimeout: 300 * time.Millisecond, Logger: frameworktest.Quiet(),
		Propagator: cfg.Server.Propagator}
	cfg.Logger = frameworktest.Quiet()
	n, err := nodecontroller.New(cfg)
	require.NoError(t, err)
	var l net.Listener
	require.Eventually(t, func() bool { l, err = net.Listen("tcp", addr); return err == nil }, 5*time.Second, 10*time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Server().Serve(l)
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Server().Shutdown(ctx)
		<-done
		n.Close()
	}
	t.Cleanup(stop)
	return n, "http://" + l.Addr().String(), stop
}

func runKubelet(t *testing.T, cfg kubelet.Config) *kubelet.Kubelet {
	t.Helper()
	cfg.Logger = frameworktest.Quiet()
	cfg.Client.Logger = frameworktest.Quiet()
	cfg.Client.Component = "kubelet"
	if cfg.Client.Release == "" {
		cfg.Client.Release = "1.31.0"
	}
	k, err := kubelet.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		k.Close()
	})
	return k
}

// running returns the pods the node controller holds Running, by UID, with
// their nodes.
func running(n *nodecontroller.NodeController) map[string]string {
	out := map[string]string{}
	for _, p := range n.Pods() {
		if p.Phase == "Running" {
			out[p.UID] = p.NodeName
		}
	}
	return out
}

func states(n *nodecontroller.NodeController) map[string]nhv2.NodeHealthState {
	out := map[string]nhv2.NodeHealthState{}
	for _, h := range n.Health() {
		out[h.NodeName] = h.State
	}
	return out
}

// A node controller that restarts knows nothing; kubelets whose nodes did
// not change are asked for a full resync, and report.
func TestRestartedNodeControllerAsksForResync(t *testing.T) {
	n, url, stop := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", ResyncAfter: 5 * time.Second})
	k := runKubelet(t, kubelet.Config{API: "v2", Nodes: 3, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{url}}})
	ready := map[string]nhv2.NodeHealthState{"node-000": "Ready", "node-001": "Ready", "node-002": "Ready"}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(ready, states(n)) }, 5*time.Second, 10*time.Millisecond)
	assert.Zero(t, k.Stats().Resyncs.Load())

	stop()
	n2, _, _ := start(t, url[len("http://"):], nodecontroller.Config{API: "v2", ResyncAfter: 100 * time.Millisecond})
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(ready, states(n2)) }, 5*time.Second, 10*time.Millisecond,
		"the new node controller learnt every node through resyncs")
	assert.Equal(t, int64(3), k.Stats().Resyncs.Load(), "one resync per node: nothing changed on the nodes")
	assert.Zero(t, k.Stats().Failed.Load())
}

// A node whose kubelet goes away stays as it was for the grace period,
// then is Unknown and unschedulable; a kubelet that comes back makes it
// Ready again. The grace period runs on a fake clock, so "not before the
// grace period" does not depend on how long the kubelet's Close takes
// after its session ended.
func TestLostNodeIsUnknownAfterGrace(t *testing.T) {
	clock := clockwork.NewFakeClock()
	const grace = time.Minute
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", NodeGrace: grace, Clock: clock})
	k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: 1, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{url}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	require.Eventually(t, func() bool { return states(n)["node-000"] == "Ready" }, 5*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	k.Close()
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	require.NoError(t, clock.BlockUntilContext(wait, 1), "the node's grace period started")
	clock.Advance(grace - time.Second)
	assert.Equal(t, nhv2.NodeHealthStateReady, states(n)["node-000"], "not before the grace period")
	clock.Advance(time.Second)
	require.Eventually(t, func() bool { return states(n)["node-000"] == "Unknown" }, 5*time.Second, 10*time.Millisecond)
	h := n.Health()[0]
	assert.False(t, h.Schedulable)
	require.NotNil(t, h.Reason)
	assert.Contains(t, *h.Reason, "NodeLost")

	runKubelet(t, kubelet.Config{API: "v2", Nodes: 1, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{url}}})
	require.Eventually(t, func() bool { return states(n)["node-000"] == "Ready" }, 5*time.Second, 10*time.Millisecond)
}

// In fork mode the node controller takes 1.0.0 and 2.0.0 kubelets and
// schedulers: pods bound at either version reach kubelets of either
// version through the PodAssignment topic in both forms, and run; it
// publishes NodeHealth in both forms, each change once per form.
func TestForkedNodeControllerServesBothVersions(t *testing.T) {
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", Fork: true})
	runKubelet(t, kubelet.Config{API: "v1", Nodes: 2, ChangeEvery: -1, Client: framework.ClientConfig{Release: "1.30.0", Endpoints: []string{url}}})
	runKubelet(t, kubelet.Config{API: "v2", Nodes: 2, FirstNode: 2, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{url}}})
	require.Eventually(t, func() bool { return len(n.Health()) == 4 }, 5*time.Second, 10*time.Millisecond)

	// Each node gets one pod from a 1.0.0 scheduler and one from a 2.0.0
	// one, 100m and 64Mi each.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	old := nhv1.NewClient(frameworktest.NewClient(t, nhv1.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.30.0", Endpoints: []string{url}}))
	cur := nhv2.NewClient(frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{url}}))
	want := map[string]string{}
	for i := range 4 {
		node := fmt.Sprintf("node-%03d", i)
		uid := fmt.Sprintf("v1-%d", i)
		_, err := old.Bind(ctx, &nhv1.Binding{Namespace: "default", Name: uid, UID: uid, NodeName: node,
			Requests: &nhv1.ResourceList{"cpu": "100m", "memory": "64Mi"}})
		require.NoError(t, err)
		want[uid] = node
		uid = fmt.Sprintf("v2-%d", i)
		_, err = cur.Bind(ctx, &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: uid, UID: uid}, NodeName: node,
			Requests: nhv2.PodRequests{CPUMillis: 100, MemoryBytes: 64 << 20}})
		require.NoError(t, err)
		want[uid] = node
	}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, running(n)) }, 5*time.Second, 10*time.Millisecond,
		"every pod is reported Running by the kubelet of its node, 1.0.0 and 2.0.0 alike")
	assignments := map[string]int{}
	for _, ts := range n.Server().TopicStats() {
		if ts.Topic == "PodAssignment" {
			assignments[ts.Version] = ts.Keys
		}
	}
	assert.Equal(t, map[string]int{"1.0.0": 8, "2.0.0": 8}, assignments, "every assignment in both forms")
	assert.Equal(t, 4, n.TopicV1().Len())
	assert.Equal(t, 4, n.TopicV2().Len())
	h, ok := n.TopicV1().Get("node-000")
	require.True(t, ok)
	assert.True(t, h.Ready)
	assert.Equal(t, nhv1.ResourceList{"cpu": "3600m", "memory": "15232Mi", "pods": "108"}, h.Allocatable, "less the 2 pods bound to it")
	assert.Equal(t, map[string]int{"1.0.0": 2, "2.0.0": 2}, n.Server().Status().PeersByVersion["nodestatus"])

	// CheckNode answers at both versions.
	for _, v := range []*framework.Contract{nhv1.Contract, nhv2.Contract} {
		c := frameworktest.NewClient(t, v, framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{url}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if v == nhv1.Contract {
			h, err := nhv1.NewClient(c).CheckNode(ctx, &nhv1.NodeRef{NodeName: "node-003"})
			require.NoError(t, err)
			assert.True(t, h.Ready)
			_, err = nhv1.NewClient(c).CheckNode(ctx, &nhv1.NodeRef{NodeName: "node-999"})
			assert.Equal(t, framework.CodeNotFound, framework.CodeOf(err))
		} else {
			h, err := nhv2.NewClient(c).CheckNode(ctx, &nhv2.NodeRef{NodeName: "node-000"})
			require.NoError(t, err)
			assert.Equal(t, nhv2.NodeHealthStateReady, h.State)
		}
		cancel()
	}
}

// pausable is a kubelet's transport that can stop carrying its requests,
// as a machine too loaded to run the kubelet's heartbeats does, and counts
// the handshakes it carried once resumed.
type pausable struct {
	base      http.RoundTripper
	paused    atomic.Bool
	welcomed  atomic.Int64 // handshakes answered 200 while not paused
	handshake string
}

func (p *pausable) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.paused.Load() {
		return nil, errors.New("paused")
	}
	resp, err := p.base.RoundTrip(r)
	if err == nil && r.URL.Path == p.handshake && resp.StatusCode == http.StatusOK {
		p.welcomed.Add(1)
	}
	return resp, err
}

// A kubelet whose session lapsed (its heartbeats stalled) and that opens a
// session again within the grace period keeps its node known: the new
// session ends the grace period, even before the kubelet reports to this
// node controller again (its reports may go to another replica). A node
// whose kubelet does not come back is Unknown once the grace period
// passes. The grace period runs on a fake clock.
func TestKubeletBackWithinTheGracePeriodKeepsItsNode(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	const grace = time.Minute
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", NodeGrace: grace, Clock: clock})
	stalls := &pausable{base: framework.NewTransport(nil), handshake: protocol.PathHandshake}
	stalling := runKubelet(t, kubelet.Config{API: "v2", Nodes: 1, ChangeEvery: -1,
		Client: framework.ClientConfig{Endpoints: []string{url}, Transport: stalls}})
	gone, err := kubelet.New(kubelet.Config{API: "v2", Nodes: 1, FirstNode: 1, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{url}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	goneCtx, stopGone := context.WithCancel(ctx)
	goneDone := make(chan struct{})
	go func() { defer close(goneDone); gone.Run(goneCtx) }()
	ready := map[string]nhv2.NodeHealthState{"node-000": "Ready", "node-001": "Ready"}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(ready, states(n)) }, 10*time.Second, 10*time.Millisecond)

	// node-000's kubelet stalls until its session lapses, then resumes and
	// opens a session again.
	instance := stalling.Client(0).Instance()
	held := func() bool {
		for _, s := range n.Server().Sessions() {
			if s.Peer.Instance == instance {
				return true
			}
		}
		return false
	}
	stalls.paused.Store(true)
	require.Eventually(t, func() bool { return !held() }, 10*time.Second, 10*time.Millisecond, "the stalled kubelet's session lapsed")
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "node-000's grace period started")
	welcomed := stalls.welcomed.Load()
	stalls.paused.Store(false)
	require.Eventually(t, func() bool { return stalls.welcomed.Load() > welcomed }, 10*time.Second, 10*time.Millisecond,
		"the kubelet opened a session again")
	clock.Advance(grace + time.Second) // past node-000's grace period, had it not ended

	// node-001's kubelet goes away for good: its grace period ends later.
	stopGone()
	<-goneDone
	gone.Close()
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "node-001's grace period started")
	clock.Advance(grace + time.Second)
	require.Eventually(t, func() bool { return states(n)["node-001"] == "Unknown" }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, nhv2.NodeHealthStateReady, states(n)["node-000"], "node-000's kubelet came back within the grace period")
}

// A kubelet whose session lapsed for longer than the grace period, so
// that its node went Unknown, resumes its node when the same kubelet
// instance opens a session again: the node is Ready again at once, and
// the node controller asks for no full resync and receives no status, as
// nothing changed on the node. A lapse costs a handshake. The grace
// period runs on a fake clock.
func TestLapsedKubeletResumesItsNodeWithoutAFullReport(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	const grace = time.Minute
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", NodeGrace: grace, Clock: clock, ResyncAfter: 50 * time.Millisecond})
	stalls := &pausable{base: framework.NewTransport(nil), handshake: protocol.PathHandshake}
	k := runKubelet(t, kubelet.Config{API: "v2", Nodes: 1, ChangeEvery: -1,
		Client: framework.ClientConfig{Endpoints: []string{url}, Transport: stalls}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.Eventually(t, func() bool { return states(n)["node-000"] == "Ready" }, 10*time.Second, 10*time.Millisecond)
	reports := k.Stats().StatusReports.Load()

	instance := k.Client(0).Instance()
	held := func() bool {
		for _, s := range n.Server().Sessions() {
			if s.Peer.Instance == instance {
				return true
			}
		}
		return false
	}
	stalls.paused.Store(true)
	require.Eventually(t, func() bool { return !held() }, 10*time.Second, 10*time.Millisecond, "the stalled kubelet's session lapsed")
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "node-000's grace period started")
	clock.Advance(grace + time.Second)
	require.Eventually(t, func() bool { return states(n)["node-000"] == "Unknown" }, 10*time.Second, 10*time.Millisecond)
	_, lost := n.IsLost("node-000")
	assert.True(t, lost)

	welcomed := stalls.welcomed.Load()
	stalls.paused.Store(false)
	require.Eventually(t, func() bool { return stalls.welcomed.Load() > welcomed }, 10*time.Second, 10*time.Millisecond,
		"the kubelet opened a session again")
	require.Eventually(t, func() bool { return states(n)["node-000"] == "Ready" }, 10*time.Second, 10*time.Millisecond,
		"the new session of the same kubelet instance resumed its node")
	_, lost = n.IsLost("node-000")
	assert.False(t, lost)
	// Without the resume the node is Ready only once the resync the node
	// controller asks for made the kubelet report it, so Ready now says
	// whether one was asked.
	assert.Zero(t, k.Stats().Resyncs.Load(), "no full resync asked")
	assert.Equal(t, reports, k.Stats().StatusReports.Load(), "no status sent again: nothing changed")
	assert.Zero(t, k.Stats().Failed.Load())
}

// peerPropagator stands in for a tracing propagator: what it carries of a
// context is the instance of the peer whose request the context is.
type peerPropagator struct{}

func (peerPropagator) Inject(ctx context.Context, h http.Header) {
	if p := framework.PeerFromContext(ctx); p != nil {
		h.Set("Test-Request-Of", p.Instance)
	}
}

func (peerPropagator) Extract(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, peerPropagator{}, h.Get("Test-Request-Of"))
}

// The health a kubelet's report changes is written on the report's
// context, so the change carries what the request's context holds (its
// trace context, with the otel module's propagator) to the scheduler's
// informer.
func TestHealthChangesCarryTheReportsContext(t *testing.T) {
	_, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", Server: framework.ServerConfig{Propagator: peerPropagator{}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	scheduler := frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0",
		Endpoints: []string{url}, Propagator: peerPropagator{}, Logger: frameworktest.Quiet()})
	carried := make(chan string, 1)
	var inf *framework.Informer[nhv2.NodeHealth]
	ready := make(chan struct{})
	inf, err := nhv2.WatchNodeHealth(ctx, scheduler, framework.InformerHandlers[nhv2.NodeHealth]{
		OnAdd: func(key string, _ *nhv2.NodeHealth) {
			<-ready
			v, _ := inf.DeliveryContext().Value(peerPropagator{}).(string)
			carried <- key + " " + v
		},
	})
	require.NoError(t, err)
	close(ready)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))

	kubelet := frameworktest.NewClient(t, nsv2.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{url}, Instance: "kubelet-node-1", Logger: frameworktest.Quiet()})
	_, err = nsv2.NewClient(kubelet).ReportStatus(ctx, nodeStatus("node-1"))
	require.NoError(t, err)
	select {
	case got := <-carried:
		assert.Equal(t, "node-1 kubelet-node-1", got, "the change carries the report's context")
	case <-ctx.Done():
		t.Fatal("the scheduler saw no NodeHealth")
	}
}
