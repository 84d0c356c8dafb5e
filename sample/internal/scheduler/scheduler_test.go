package scheduler_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/extender"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

func serve(t *testing.T, srv *framework.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return "http://" + l.Addr().String()
}

func serverConfig(component, release string) framework.ServerConfig {
	return framework.ServerConfig{Component: component, Release: release, SessionTTL: time.Second,
		Heartbeat: 50 * time.Millisecond, Logger: frameworktest.Quiet()}
}

// system is a node controller with three nodes (node-001 in maintenance at
// both extenders), a lockstep extender at api, and a plain 1.0.0 extender.
type system struct {
	nodeController, extender, plain string
	nc                              *nodecontroller.NodeController
}

func startSystem(t *testing.T, api string, fork bool) system {
	t.Helper()
	var s system
	nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", Fork: true, Server: serverConfig("nodecontroller", "1.31.0"), Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	s.nodeController, s.nc = serve(t, nc.Server()), nc
	k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: 3, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{s.nodeController}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; k.Close() })

	e, err := extender.New(extender.Config{API: api, Fork: fork, Maintenance: []string{"node-001"}, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	srv, err := e.Server(serverConfig("extender", "1.31.0"))
	require.NoError(t, err)
	s.extender = serve(t, srv)

	plain, err := extender.New(extender.Config{API: "v1", Plain: true, PlainPrefix: "/ext", Maintenance: []string{"node-001"}, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	psrv, err := plain.Server(serverConfig("extender", "1.30.0"))
	require.NoError(t, err)
	s.plain = serve(t, psrv) + "/ext"
	return s
}

func newScheduler(t *testing.T, sys system, api string, fork bool) *scheduler.Scheduler {
	t.Helper()
	base := func(endpoints ...string) framework.ClientConfig {
		return framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: endpoints, Logger: frameworktest.Quiet()}
	}
	s, err := scheduler.New(scheduler.Config{API: api, Fork: fork, NodeHealth: base(sys.nodeController), Logger: frameworktest.Quiet(),
		Extenders: []scheduler.ExtenderConfig{
			{Name: "spread", Client: base(sys.extender), Bind: true, Weight: 1},
			{Name: "legacy", Client: base(), PinnedURL: sys.plain, PinnedVersion: "1.0.0", Weight: 1},
		}})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestSchedulerPlacesPodsThroughBothExtenders(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		extenderAPI           string // the lockstep extender's generation
		extenderFork          bool
		schedulerAPI          string
		schedulerFork         bool
		spreadVersion, legacy string // the versions the scheduler calls them at
	}{
		{"all v1", "v1", false, "v1", false, "1.0.0", "1.0.0"},
		{"v2 scheduler in fork mode, v1 extender", "v1", false, "v2", true, "1.0.0", "1.0.0"},
		{"v1 scheduler, v2 extender in fork mode", "v2", true, "v1", false, "1.0.0", "1.0.0"},
		{"all v2 in fork mode", "v2", true, "v2", true, "2.0.0", "1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := startSystem(t, tc.extenderAPI, tc.extenderFork)
			s := newScheduler(t, sys, tc.schedulerAPI, tc.schedulerFork)
			require.Eventually(t, func() bool { return s.Ready() == nil && len(s.Candidates()) == 3 }, eventWait, 10*time.Millisecond)
			assert.Equal(t, tc.spreadVersion, s.ExtenderClient("spread").Endpoints()[0].Version)
			assert.Equal(t, tc.legacy, s.ExtenderClient("legacy").Endpoints()[0].Version)
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			placed := map[string]int{}
			chosen := map[string]string{}
			for i := 0; i < 20; i++ {
				pod := s.NewPod()
				node, err := s.ScheduleOne(ctx, pod)
				require.NoError(t, err)
				placed[node]++
				chosen[pod.UID] = node
			}
			// Each binding reached the node controller, whose kubelet
			// runs the pod on the node the scheduler chose.
			require.Eventually(t, func() bool {
				running := map[string]string{}
				for _, p := range sys.nc.Pods() {
					if p.Phase == "Running" {
						running[p.UID] = p.NodeName
					}
				}
				return assert.ObjectsAreEqual(chosen, running)
			}, eventWait, 10*time.Millisecond, "every pod Running where it was placed")
			assert.Equal(t, 2, placed["node-001"], "onto the node in maintenance go only the pods that tolerate it (every tenth): %v", placed)

			// Both extenders take part in preemption: preempting on the
			// node in maintenance would not help.
			victim, other := s.NewPod(), s.NewPod()
			for _, name := range []string{"spread", "legacy"} {
				res, err := s.Preempt(ctx, name, s.NewPod(), []extv2.PreemptRequestCandidatesItem{
					{Node: "node-000", Victims: []extv2.PodRef{victim}}, {Node: "node-001", Victims: []extv2.PodRef{other}}})
				require.NoError(t, err, name)
				assert.Equal(t, []extv2.PreemptResponseCandidatesItem{{Node: "node-000", Victims: []string{victim.UID}}}, res.Candidates, name)
			}
			assert.InDelta(t, placed["node-000"], placed["node-002"], 1, "the others spread evenly: %v", placed)
		})
	}
}

// placeWait bounds a test's run of placements (ScheduleOne and Preempt
// calls, each through the extenders and the node controller), eventWait a
// wait for the system to reach a state: both only bound a stuck system,
// and end as soon as it is done. Under the race detector on a loaded
// 2-core machine twenty placements took more than 10 s, and the
// scheduler's view of six nodes more than 10 s to fill.
const placeWait, eventWait = time.Minute, 20 * time.Second

func TestSchedulerV2WithoutForkCannotCallV1Extenders(t *testing.T) {
	sys := startSystem(t, "v1", false)
	_, err := scheduler.New(scheduler.Config{API: "v2", Logger: frameworktest.Quiet(),
		NodeHealth: framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{sys.nodeController}, Logger: frameworktest.Quiet()},
		Extenders: []scheduler.ExtenderConfig{{Name: "legacy", PinnedURL: sys.plain, PinnedVersion: "1.0.0",
			Client: framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Logger: frameworktest.Quiet()}}}})
	assert.ErrorContains(t, err, "fork mode", "a pinned 1.0.0 extender needs the 2.0.0 scheduler's fork")

	// A lockstep v1 extender blocks a v2 scheduler without fork mode.
	s := newSchedulerWithout(t, sys)
	ext := s.ExtenderClient("spread")
	// Once the node controller is reached, what keeps it unready is the
	// extender, which refuses it.
	require.Eventually(t, func() bool {
		eps := ext.Endpoints()
		err := s.Ready()
		return len(eps) == 1 && eps[0].State == "refused" && err != nil && strings.Contains(err.Error(), "extender spread")
	}, 10*time.Second, 5*time.Millisecond, "the v1 extender refuses the v2 scheduler: %v", s.Ready())
	assert.ErrorContains(t, s.Ready(), "extender spread")
	// A call waits for a compatible extender: it is seen blocked, and ends
	// only when its caller gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	filtered := make(chan error, 1)
	go func() { _, err := s.Filter(ctx, "spread", s.NewPod(), []string{"node-000"}); filtered <- err }()
	require.Eventually(t, func() bool { return ext.Status().Blocked == 1 }, 10*time.Second, 5*time.Millisecond, "the call blocks")
	select {
	case err := <-filtered:
		t.Fatalf("the call returned while the extender was incompatible: %v", err)
	default:
	}
	cancel()
	err = <-filtered
	assert.True(t, errors.Is(err, context.Canceled) || framework.CodeOf(err) == framework.CodeCanceled, "it blocked: %v", err)
}

func newSchedulerWithout(t *testing.T, sys system) *scheduler.Scheduler {
	base := func(endpoints ...string) framework.ClientConfig {
		return framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: endpoints, Logger: frameworktest.Quiet()}
	}
	s, err := scheduler.New(scheduler.Config{API: "v2", NodeHealth: base(sys.nodeController), Logger: frameworktest.Quiet(),
		Extenders: []scheduler.ExtenderConfig{{Name: "spread", Client: base(sys.extender), Bind: true}}})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}
