package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// The scheduler places a pod only where what it requests fits in what is
// left of the node's allocatable resources, which the node controller
// lowers by what the pods bound to the node request: a 3800m node takes a
// 3000m pod, then not a 1000m one, then an 800m one.
func TestSchedulerPlacesPodsWhereTheirRequestsFit(t *testing.T) {
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", Fork: true, Server: serverConfig("nodecontroller", "1.31.0"), Logger: frameworktest.Quiet()})
			require.NoError(t, err)
			url := serve(t, nc.Server())
			k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: 1, ChangeEvery: -1, Logger: frameworktest.Quiet(),
				Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{url}, Logger: frameworktest.Quiet()}})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); k.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done; k.Close() })
			s, err := scheduler.New(scheduler.Config{API: api, Fork: api == "v2", Logger: frameworktest.Quiet(),
				NodeHealth: framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{url}, Logger: frameworktest.Quiet()}})
			require.NoError(t, err)
			t.Cleanup(s.Close)
			cpuLeft := func() int64 {
				for _, h := range s.Nodes() {
					return h.Allocatable.CPUMillis
				}
				return -1
			}
			require.Eventually(t, func() bool { return cpuLeft() == 3800 }, 5*time.Second, 10*time.Millisecond)

			priority := int64(scheduler.PriorityClasses[1].Value)
			pod := func(cpu int64) extv2.PodRef {
				p := s.NewPod()
				p.Requests = extv2.Requests{CPUMillis: cpu, MemoryBytes: 1 << 30}
				p.Priority = &priority // one priority: no pod may preempt another
				return p
			}
			callCtx, callCancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer callCancel()
			node, err := s.ScheduleOne(callCtx, pod(3000))
			require.NoError(t, err)
			assert.Equal(t, "node-000", node)
			require.Eventually(t, func() bool { return cpuLeft() == 800 }, 5*time.Second, 10*time.Millisecond, "the node has 800m left")
			_, err = s.ScheduleOne(callCtx, pod(1000))
			assert.ErrorIs(t, err, scheduler.ErrNoNode, "1000m does not fit in 800m, and the pod there has the same priority")
			_, err = s.ScheduleOne(callCtx, pod(800))
			assert.NoError(t, err, "800m does")
			assert.Len(t, nc.Pods(), 2)
		})
	}
}
