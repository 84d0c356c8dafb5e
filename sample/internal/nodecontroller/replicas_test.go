package nodecontroller_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// leaders returns the replicas that write NodeHealth.
func leaders(ncs []*nodecontroller.NodeController) []*nodecontroller.NodeController {
	var out []*nodecontroller.NodeController
	for _, n := range ncs {
		if n.Leader() {
			out = append(out, n)
		}
	}
	return out
}

// Three replicas share a lease: one writes NodeHealth, the scheduler's
// informer watches it, and when the leader is restarted another replica
// takes over, already holding every node's health; the informer follows
// without ever seeing a node deleted.
func TestReplicasElectOneWriterAndInformersFollowIt(t *testing.T) {
	lease := nodecontroller.NewMemoryLease()
	// The lease has its default TTL (a second, renewed every third of it):
	// a shorter one can let a stall of a loaded machine hand the lease on
	// between the election and the informer's sync the test compares.
	cfg := nodecontroller.Config{API: "v2", Lease: lease, ResyncAfter: 100 * time.Millisecond}
	ncs := make([]*nodecontroller.NodeController, 3)
	urls := make([]string, 3)
	stops := make([]func(), 3)
	for i := range ncs {
		ncs[i], urls[i], stops[i] = start(t, "127.0.0.1:0", cfg)
	}
	runKubelet(t, kubelet.Config{API: "v2", Nodes: 4, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: urls}})
	ready := map[string]nhv2.NodeHealthState{"node-000": "Ready", "node-001": "Ready", "node-002": "Ready", "node-003": "Ready"}
	require.Eventually(t, func() bool {
		for _, n := range ncs {
			if !assert.ObjectsAreEqual(ready, states(n)) {
				return false
			}
		}
		return len(leaders(ncs)) == 1
	}, 10*time.Second, 10*time.Millisecond, "every replica knows every node; one leads")

	c := frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: urls})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var deleted atomic.Int64
	inf, err := framework.Watch(ctx, c, "NodeHealth", framework.InformerHandlers[nhv2.NodeHealth]{
		OnDelete: func(k string, _ *nhv2.NodeHealth) { deleted.Add(1); t.Logf("delete %s", k) },
	})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))
	leader := leaders(ncs)[0]
	assert.Equal(t, leader.Server().Instance(), inf.Server(), "the informer synced from the leader")
	assert.Equal(t, 4, inf.Len())

	// A rolling restart: the leader goes first.
	for i, n := range ncs {
		if n == leader {
			stops[i]()
			ncs[i], _, stops[i] = start(t, urls[i][len("http://"):], cfg)
		}
	}
	require.Eventually(t, func() bool {
		l := leaders(ncs)
		return len(l) == 1 && l[0] != leader && inf.Server() == l[0].Server().Instance() && inf.Len() == 4
	}, 10*time.Second, 10*time.Millisecond, "another replica leads and the informer follows it")
	assert.Zero(t, deleted.Load(), "no node was ever reported deleted")
}

// The file lease the binaries share: one holder at a time, renewable, free
// once released or expired.
func TestFileLease(t *testing.T) {
	l := nodecontroller.FileLease{Path: filepath.Join(t.TempDir(), "lease")}
	claim := func(holder string, ttl time.Duration) bool {
		t.Helper()
		held, err := l.Acquire(nodecontroller.Claim{Holder: holder, TTL: ttl, HearsKubelets: true})
		require.NoError(t, err)
		return held
	}
	assert.True(t, claim("a", time.Minute))
	assert.False(t, claim("b", time.Minute), "a holds it")
	assert.True(t, claim("a", time.Minute), "a renews")
	require.NoError(t, l.Release("b"), "b holds nothing: nothing happens")
	assert.False(t, claim("b", time.Minute))
	require.NoError(t, l.Release("a"))
	assert.True(t, claim("b", time.Nanosecond), "released: b takes it")
	assert.True(t, claim("a", time.Minute), "b's lease expired")
	require.NoError(t, os.WriteFile(l.Path, []byte("torn"), 0o644))
	assert.True(t, claim("c", time.Minute), "a torn file starts over")
}

// Both leases apply the same rules: a claim that hears kubelets takes a
// running lease from a holder whose last claim did not, and no other
// claim takes it from its holder; a take-over claim takes only that, not
// a free lease.
func TestLeaseGoesToAReplicaThatHearsKubelets(t *testing.T) {
	t.Parallel()
	leases := map[string]func() nodecontroller.Lease{
		"memory": func() nodecontroller.Lease { return nodecontroller.NewMemoryLease() },
		"file": func() nodecontroller.Lease {
			return nodecontroller.FileLease{Path: filepath.Join(t.TempDir(), "lease")}
		},
	}
	for _, tc := range []struct {
		free                    bool // nobody holds the lease (the first holder released it)
		holderHears, claimHears bool // the holder's last claim, the other replica's claim
		takeOver                bool // the other replica's claim is a take-over (Claim.TakeOver)
		taken                   bool // the other replica takes the lease
	}{
		{holderHears: true, claimHears: true, taken: false},
		{holderHears: true, claimHears: false, taken: false},
		{holderHears: false, claimHears: false, taken: false}, // a total outage of the kubelets keeps its writer
		{holderHears: false, claimHears: true, taken: true},
		{holderHears: false, claimHears: true, takeOver: true, taken: true},
		{holderHears: true, claimHears: true, takeOver: true, taken: false},
		{free: true, claimHears: true, taken: true},
		{free: true, claimHears: true, takeOver: true, taken: false}, // a take-over claim takes no free lease
	} {
		for name, newLease := range leases {
			l := newLease()
			held, err := l.Acquire(nodecontroller.Claim{Holder: "a", TTL: time.Minute, HearsKubelets: tc.holderHears})
			require.NoError(t, err)
			require.True(t, held)
			if tc.free {
				require.NoError(t, l.Release("a"))
			}
			held, err = l.Acquire(nodecontroller.Claim{Holder: "b", TTL: time.Minute, HearsKubelets: tc.claimHears, TakeOver: tc.takeOver})
			require.NoError(t, err)
			assert.Equal(t, tc.taken, held, "%s lease, %+v", name, tc)
			if tc.free {
				continue
			}
			held, err = l.Acquire(nodecontroller.Claim{Holder: "a", TTL: time.Minute, HearsKubelets: tc.holderHears})
			require.NoError(t, err)
			assert.Equal(t, !tc.taken, held, "%s lease: the first holder renews unless the lease was taken", name)
		}
	}
}

// The leader gives the lease up as soon as its server begins to drain, not
// once the drain is over: the lease is free, for a replica that stays to
// take at once, while the drain still waits for a call in flight. A drain
// can outlast the nodes' grace period on a loaded machine.
func TestLeaderResignsWhenItsServerBeginsToDrain(t *testing.T) {
	t.Parallel()
	var hold atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	lease := nodecontroller.NewMemoryLease()
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", Lease: lease,
		ResyncAfter: 100 * time.Millisecond, Applied: func(ctx context.Context) {
			if call := framework.CallFromContext(ctx); call != nil && call.Method == "CheckNode" && hold.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
		}})
	runKubelet(t, kubelet.Config{API: "v2", Nodes: 2, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{url}}})
	require.Eventually(t, func() bool { return n.Leader() && len(n.Health()) == 2 }, 10*time.Second, 10*time.Millisecond,
		"the replica knows both nodes and leads")
	assert.Equal(t, n.Server().Instance(), lease.Holder())

	// A CheckNode call in its handler keeps the drain from ending.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hold.Store(true)
	c := frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{url}})
	go func() { _, _ = nhv2.NewClient(c).CheckNode(ctx, &nhv2.NodeRef{NodeName: "node-000"}) }()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the CheckNode call never reached its handler")
	}
	drained := make(chan error, 1)
	go func() { drained <- n.Server().Shutdown(ctx) }()
	require.Eventually(t, func() bool { return !n.Leader() && lease.Holder() == "" }, 10*time.Second, 10*time.Millisecond,
		"the draining replica gave the lease up")
	select {
	case err := <-drained:
		t.Fatalf("the drain ended (%v) before the call it waits for", err)
	default:
	}
	close(release)
	require.NoError(t, <-drained)
	assert.False(t, n.Leader(), "a replica that drained competes no more")
}

// A leader that hears no kubelet gives the lease to a replica that does:
// when the kubelet moves to another replica (as a kubelet of a newer
// version moves to a replica that speaks it), the old leader, which would
// mark every node Unknown once the grace period ends, stops writing
// NodeHealth while it still runs.
func TestLeaderThatHearsNoKubeletGivesWay(t *testing.T) {
	t.Parallel()
	cfg := nodecontroller.Config{API: "v2", Lease: nodecontroller.NewMemoryLease(), LeaseTTL: 300 * time.Millisecond,
		ResyncAfter: 100 * time.Millisecond, NodeGrace: time.Minute}
	a, urlA, _ := start(t, "127.0.0.1:0", cfg)
	b, urlB, _ := start(t, "127.0.0.1:0", cfg)
	ready := map[string]nhv2.NodeHealthState{"node-000": "Ready", "node-001": "Ready"}

	old, err := kubelet.New(kubelet.Config{API: "v2", Nodes: 2, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{urlA}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); old.Run(ctx) }()
	require.Eventually(t, func() bool { return a.Leader() && assert.ObjectsAreEqual(ready, states(a)) }, 10*time.Second, 10*time.Millisecond,
		"the replica that hears the kubelet leads")
	assert.False(t, b.Leader())
	cancel()
	<-done
	old.Close()

	runKubelet(t, kubelet.Config{API: "v2", Nodes: 2, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{urlB}}})
	require.Eventually(t, func() bool { return b.Leader() && !a.Leader() }, 10*time.Second, 10*time.Millisecond,
		"the replica that hears the new kubelet takes over from the one that hears none")
	assert.Equal(t, ready, states(b))
	assert.Equal(t, ready, states(a), "within the grace period the old leader still holds the nodes Ready")
}

// A replica that has just started takes the lease from a holder that
// hears no kubelet as soon as it has caught up, without first waiting the
// TTL it waits before competing for a free lease: the kubelet's new
// replica must lead before the nodes' grace period ends on the old one.
// The TTL here is a minute, longer than the test may take.
func TestNewReplicaTakesOverFromALeaderThatHearsNoKubeletAtOnce(t *testing.T) {
	t.Parallel()
	lease := nodecontroller.NewMemoryLease()
	held, err := lease.Acquire(nodecontroller.Claim{Holder: "deaf", TTL: time.Hour})
	require.NoError(t, err)
	require.True(t, held)
	n, url, _ := start(t, "127.0.0.1:0", nodecontroller.Config{API: "v2", Lease: lease, LeaseTTL: time.Minute, ResyncAfter: 100 * time.Millisecond})
	runKubelet(t, kubelet.Config{API: "v2", Nodes: 2, ChangeEvery: -1, Client: framework.ClientConfig{Endpoints: []string{url}}})
	require.Eventually(t, n.Leader, 10*time.Second, 10*time.Millisecond, "the new replica took over")
	assert.Equal(t, n.Server().Instance(), lease.Holder())
	require.Eventually(t, func() bool { return len(n.Health()) == 2 }, 10*time.Second, 10*time.Millisecond, "and leads with both nodes")
}
