package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"

	"github.com/lockstep-dev/lockstep/framework"
)

// TestControllerReconcilesEveryChangeThroughTheQueue runs the controller
// against a node controller on 127.0.0.1: every node is reconciled with its
// latest state, a failed reconcile is retried after the queue's backoff, a
// deleted node is reconciled as gone, and the lister's index answers from
// the cache.
func TestControllerReconcilesEveryChangeThroughTheQueue(t *testing.T) {
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"})
	require.NoError(t, err)
	health := framework.ServeTopic[NodeHealth](srv, Contract, "NodeHealth")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-served; err != nil && err != http.ErrServerClosed {
			t.Error(err)
		}
	})
	for _, h := range []NodeHealth{{"node-1", true, "a"}, {"node-2", false, "a"}, {"node-3", true, "b"}} {
		require.NoError(t, health.Set(&h))
	}

	client, err := framework.NewClient(Contract, framework.ClientConfig{Component: "remediator", Release: "1.0.0",
		Endpoints: []string{"http://" + l.Addr().String()}})
	require.NoError(t, err)
	defer client.Close()

	var mu sync.Mutex
	seen := map[string][]string{} // key → the state each reconcile saw
	failedOnce := false
	reconcile := func(_ context.Context, key string, h *NodeHealth) error {
		mu.Lock()
		defer mu.Unlock()
		state := "gone"
		if h != nil {
			state = map[bool]string{true: "ready", false: "not ready"}[h.Ready]
		}
		seen[key] = append(seen[key], state)
		if key == "node-2" && !failedOnce {
			failedOnce = true
			return assert.AnError // retried after the queue's backoff
		}
		return nil
	}
	f := framework.NewInformerFactory(client, 0)
	c, err := NewController(f, workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second), reconcile)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx, 2) }()

	last := func(key string) string {
		mu.Lock()
		defer mu.Unlock()
		if s := seen[key]; len(s) > 0 {
			return s[len(s)-1]
		}
		return ""
	}
	attempts := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen[key])
	}
	require.Eventually(t, func() bool {
		return last("node-1") == "ready" && last("node-3") == "ready" && attempts("node-2") >= 2
	}, 10*time.Second, 5*time.Millisecond)
	mu.Lock()
	assert.Equal(t, []string{"not ready", "not ready"}, seen["node-2"], "the failed reconcile was retried")
	mu.Unlock()
	notReady, err := c.NotReady("a")
	require.NoError(t, err)
	assert.Equal(t, []string{"node-2"}, notReady)

	require.NoError(t, health.Set(&NodeHealth{Node: "node-3", Ready: false, Zone: "b"}))
	require.NoError(t, health.Delete("node-1"))
	require.Eventually(t, func() bool { return last("node-3") == "not ready" && last("node-1") == "gone" }, 10*time.Second, 5*time.Millisecond)
	notReady, err = c.NotReady("b")
	require.NoError(t, err)
	assert.Equal(t, []string{"node-3"}, notReady)

	stop()
	require.NoError(t, <-ran)
}
