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
	cfg := nodecontroller.Config{API: "v2", Lease: lease, LeaseTTL: 300 * time.Millisecond, ResyncAfter: 100 * time.Millisecond}
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
	held, err := l.Acquire("a", time.Minute)
	require.NoError(t, err)
	assert.True(t, held)
	held, _ = l.Acquire("b", time.Minute)
	assert.False(t, held, "a holds it")
	held, _ = l.Acquire("a", time.Minute)
	assert.True(t, held, "a renews")
	require.NoError(t, l.Release("b"), "b holds nothing: nothing happens")
	held, _ = l.Acquire("b", time.Minute)
	assert.False(t, held)
	require.NoError(t, l.Release("a"))
	held, _ = l.Acquire("b", time.Nanosecond)
	assert.True(t, held, "released: b takes it")
	held, _ = l.Acquire("a", time.Minute)
	assert.True(t, held, "b's lease expired")
	require.NoError(t, os.WriteFile(l.Path, []byte("torn"), 0o644))
	held, err = l.Acquire("c", time.Minute)
	require.NoError(t, err)
	assert.True(t, held, "a torn file starts over")
}
