package nodecontroller_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// cutOff is a kubelet's transport that stops carrying its requests to
// some hosts, as when its session with one replica lapses while the others
// go on hearing it.
type cutOff struct {
	base http.RoundTripper
	mu   sync.Mutex
	cut  map[string]bool
}

func (c *cutOff) set(host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut[host] = true
}

func (c *cutOff) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	cut := c.cut[r.URL.Host]
	c.mu.Unlock()
	if cut {
		return nil, errors.New("cut off")
	}
	return c.base.RoundTrip(r)
}

// Replicas that share a Liveness keep a node known while any of them holds
// a session of its kubelet: the replica whose session lapsed sees its
// grace period run on, and the node becomes Unknown only once no replica
// has heard the kubelet for the grace period. The grace periods run on a
// fake clock.
func TestReplicasKeepANodeKnownWhileAnotherHearsItsKubelet(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	const grace = time.Minute
	// Replicas (a lease) ask a kubelet for a resync until they know its
	// node, so both learn it whichever one its report reaches.
	cfg := nodecontroller.Config{API: "v2", NodeGrace: grace, Clock: clock, Liveness: nodecontroller.NewLiveness(),
		Lease: nodecontroller.NewMemoryLease(), LeaseTTL: 300 * time.Millisecond, ResyncAfter: 100 * time.Millisecond}
	a, urlA, _ := start(t, "127.0.0.1:0", cfg)
	b, urlB, _ := start(t, "127.0.0.1:0", cfg)
	transport := &cutOff{base: framework.NewTransport(nil), cut: map[string]bool{}}
	runKubelet(t, kubelet.Config{API: "v2", Nodes: 1, ChangeEvery: -1,
		Client: framework.ClientConfig{Endpoints: []string{urlA, urlB}, Transport: transport}})
	ready := map[string]nhv2.NodeHealthState{"node-000": "Ready"}
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(ready, states(a)) && assert.ObjectsAreEqual(ready, states(b))
	},
		10*time.Second, 10*time.Millisecond, "both replicas know the node")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holds := func(n *nodecontroller.NodeController) bool { return len(n.Server().Sessions()) > 0 }

	// The kubelet's session with a lapses; b goes on hearing it.
	transport.set(urlA[len("http://"):])
	require.Eventually(t, func() bool { return !holds(a) }, 10*time.Second, 10*time.Millisecond, "a's session lapsed")
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "a's grace period started")
	clock.Advance(grace + time.Second)
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "a's grace period ran on: b hears the kubelet")
	assert.Equal(t, ready, states(a))
	assert.True(t, holds(b))

	// Now b loses it too: once no replica has heard the kubelet for the
	// grace period, both hold the node Unknown.
	transport.set(urlB[len("http://"):])
	require.Eventually(t, func() bool { return !holds(b) }, 10*time.Second, 10*time.Millisecond, "b's session lapsed")
	require.NoError(t, clock.BlockUntilContext(ctx, 2), "b's grace period started beside a's")
	clock.Advance(grace - time.Second)
	require.NoError(t, clock.BlockUntilContext(ctx, 2), "a's grace period runs to a grace period after b lost the kubelet")
	assert.Equal(t, ready, states(a))
	clock.Advance(2 * time.Second)
	lost := map[string]nhv2.NodeHealthState{"node-000": "Unknown"}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(lost, states(a)) && assert.ObjectsAreEqual(lost, states(b)) },
		10*time.Second, 10*time.Millisecond)
	assert.Contains(t, a.Lost(), "node-000")
}
