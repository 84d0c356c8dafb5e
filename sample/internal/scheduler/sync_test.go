package scheduler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// gate is a proxy to the node controller that answers 503 until opened:
// a node controller the scheduler cannot reach yet.
type gate struct {
	URL  string
	open atomic.Bool
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	g := &gate{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // watch streams as they come
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.open.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// runScheduler runs a 1.0.0 scheduler of no extenders at 50 pods a
// second against the node controller at nodes, until the test ends.
func runScheduler(t *testing.T, nodes string, syncTimeout time.Duration, logged *records) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{API: "v1", PodRate: 50, SyncTimeout: syncTimeout, Logger: logged.logger(),
		NodeHealth: framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{nodes}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	return s
}

// TestSchedulerPlacesNoPodBeforeItsNodesSynced: kube-scheduler schedules
// only once its informers' caches synced (cmd/kube-scheduler/app/server.go,
// WaitForCacheSync). A scheduler that placed pods before its NodeHealth
// watch synced failed them as unschedulable, blamed on preemption. It says
// that it waits, and every pod it places finds the three nodes.
func TestSchedulerPlacesNoPodBeforeItsNodesSynced(t *testing.T) {
	nodes := startNodes(t)
	configured(t, nodes, "v1", frameworktest.Quiet(), "  []\n") // the three nodes are known
	g := newGate(t, nodes)
	var logged records
	s := runScheduler(t, g.URL, time.Minute, &logged)
	require.Eventually(t, func() bool {
		return strings.Contains(logged.String(), "waiting for the node controller's NodeHealth") || strings.Contains(logged.String(), "pod not scheduled")
	}, eventWait, 10*time.Millisecond)
	assert.Contains(t, logged.String(), "waiting for the node controller's NodeHealth to sync before placing pods")
	g.open.Store(true)
	require.Eventually(t, func() bool { return s.Stats().Scheduled.Load() >= 3 }, eventWait, 10*time.Millisecond)
	assert.Zero(t, s.Stats().Unschedulable.Load()+s.Stats().Failed.Load(), "pods placed before the nodes were known: %s", logged.String())
	assert.Contains(t, logged.String(), `msg="NodeHealth synced; placing pods" nodes=3`)
}

// TestSchedulerSaysItHasNoNodes: once SyncTimeout ran out the scheduler
// places pods without its nodes and says why they find none; a scheduler
// whose cache synced empty says there is no node, as kube-scheduler's
// ErrNoNodesAvailable, and tries no preemption.
func TestSchedulerSaysItHasNoNodes(t *testing.T) {
	nodes := startNodes(t)
	g := newGate(t, nodes)
	var logged records
	runScheduler(t, g.URL, 100*time.Millisecond, &logged)
	require.Eventually(t, func() bool { return strings.Contains(logged.String(), "pod not scheduled") }, eventWait, 10*time.Millisecond)
	assert.Contains(t, logged.String(), "no node fits the pod: the node controller's NodeHealth has not synced yet")
	assert.Contains(t, logged.String(), "NodeHealth has not synced; placing pods anyway")
	assert.NotContains(t, logged.String(), "preempting")

	nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", Fork: true, Server: serverConfig("nodecontroller", "1.31.0"), Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	empty, err := scheduler.New(scheduler.Config{API: "v1", Logger: frameworktest.Quiet(),
		NodeHealth: framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{serve(t, nc.Server())}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	t.Cleanup(empty.Close)
	require.Eventually(t, empty.Synced, eventWait, 10*time.Millisecond)
	_, err = empty.ScheduleOne(context.Background(), empty.NewPod())
	require.ErrorIs(t, err, scheduler.ErrNoNode)
	assert.EqualError(t, err, "no node fits the pod: no nodes available to schedule pods")
}
