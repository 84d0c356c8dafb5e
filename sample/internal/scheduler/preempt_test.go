package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// vetoingExtender is a preempting scheduler extender as real ones are
// written: only against k8s.io/kube-scheduler/extender/v1, decoded with
// encoding/json, at a preempt verb of its own. It keeps every node it is
// sent whole (nodeCacheCapable false), and agrees to preempt on every
// candidate but the nodes it vetoes, with all the victims proposed. It
// remembers what it was asked.
type vetoingExtender struct {
	vetoes map[string]bool

	mu    sync.Mutex
	asked []extenderv1.ExtenderPreemptionArgs
}

func (x *vetoingExtender) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ext/keep-all", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Nodes == nil {
			http.Error(w, "want ExtenderArgs with Nodes", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(&extenderv1.ExtenderFilterResult{Nodes: args.Nodes})
	})
	mux.HandleFunc("POST /ext/preempt-unless-vetoed", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderPreemptionArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Pod == nil || args.NodeNameToVictims == nil {
			http.Error(w, "want ExtenderPreemptionArgs with whole victims", http.StatusBadRequest)
			return
		}
		x.mu.Lock()
		x.asked = append(x.asked, args)
		x.mu.Unlock()
		res := extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{}}
		for node, v := range args.NodeNameToVictims {
			if x.vetoes[node] {
				continue
			}
			mv := &extenderv1.MetaVictims{NumPDBViolations: v.NumPDBViolations}
			for _, p := range v.Pods {
				mv.Pods = append(mv.Pods, &extenderv1.MetaPod{UID: string(p.UID)})
			}
			res.NodeNameToMetaVictims[node] = mv
		}
		_ = json.NewEncoder(w).Encode(&res)
	})
	return mux
}

// lastAsked returns the candidate nodes of the last preemption request,
// sorted, with the victims' UIDs and priorities by node, and the
// preemptor's priority.
func (x *vetoingExtender) lastAsked(t *testing.T) (nodes []string, victims map[string]map[string]int32, preemptor int32) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	require.NotEmpty(t, x.asked, "the extender was asked")
	args := x.asked[len(x.asked)-1]
	victims = map[string]map[string]int32{}
	for node, v := range args.NodeNameToVictims {
		nodes = append(nodes, node)
		victims[node] = map[string]int32{}
		for _, p := range v.Pods {
			require.NotNil(t, p.Spec.Priority, "a victim carries spec.priority")
			victims[node][string(p.UID)] = *p.Spec.Priority
		}
	}
	sort.Strings(nodes)
	require.NotNil(t, args.Pod.Spec.Priority, "the preemptor carries spec.priority")
	return nodes, victims, *args.Pod.Spec.Priority
}

// vetoingConfig names the vetoing extender with a preemptVerb of its own.
const vetoingConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
  - urlPrefix: %s/ext
    filterVerb: keep-all
    preemptVerb: preempt-unless-vetoed
    nodeCacheCapable: false
`

// TestSchedulerPreemptsAsAKubernetesExtenderAgrees: when no node fits a
// pod, the scheduler evicts pods of lower priority where the extender
// (written only against the Kubernetes types, called at its preemptVerb
// in the plain Kubernetes form) agrees, fewest victims first; the node
// controller evicts exactly the victims the scheduler decided on, their
// kubelet stops them, and the pod is bound and runs there. A pod of equal
// priority is never a victim: a pod that only its eviction would make
// room for stays unschedulable, and nothing is evicted.
func TestSchedulerPreemptsAsAKubernetesExtenderAgrees(t *testing.T) {
	for _, tc := range []struct {
		api  string
		fork bool
	}{{"v1", false}, {"v2", true}} {
		t.Run(tc.api, func(t *testing.T) {
			evicted := make(chan nodecontroller.Eviction, 8)
			nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", Fork: true, Server: serverConfig("nodecontroller", "1.31.0"),
				Logger: frameworktest.Quiet(), Evicted: func(e nodecontroller.Eviction) { evicted <- e }})
			require.NoError(t, err)
			ncURL := serve(t, nc.Server())
			kl := runKubelet(t, kubelet.Config{API: "v2", Nodes: 3, ChangeEvery: -1, Logger: frameworktest.Quiet(),
				Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{ncURL}, Logger: frameworktest.Quiet()}})

			x := &vetoingExtender{vetoes: map[string]bool{"node-000": true}}
			ext := httptest.NewServer(x.routes())
			t.Cleanup(ext.Close)
			kc, _, err := scheduler.ParseConfig([]byte(fmt.Sprintf(vetoingConfig, ext.URL)))
			require.NoError(t, err)
			base := framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Logger: frameworktest.Quiet()}
			extenders, err := scheduler.ExtendersFromConfig(kc, base)
			require.NoError(t, err)
			nh := base
			nh.Endpoints = []string{ncURL}
			decided := make(chan scheduler.Preemption, 8)
			s, err := scheduler.New(scheduler.Config{API: tc.api, Fork: tc.fork, NodeHealth: nh, Extenders: extenders, Logger: frameworktest.Quiet(),
				OnPreempted: func(p scheduler.Preemption) { decided <- p }})
			require.NoError(t, err)
			t.Cleanup(s.Close)
			require.Eventually(t, func() bool { return s.Ready() == nil && len(s.Candidates()) == 3 }, 10*time.Second, 10*time.Millisecond)

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Each node has 3800m allocatable: node-000 and node-001 are
			// filled with low-priority pods, node-002 with one of medium.
			bindAll(ctx, t, s, []placed{
				{prioritized("low-a", 100, 1800), "node-000"}, {prioritized("low-b", 100, 1800), "node-000"},
				{prioritized("low-c", 100, 1800), "node-001"}, {prioritized("low-d", 100, 1900), "node-001"},
				{prioritized("mid-e", 1000, 3700), "node-002"},
			})
			runningOn := func(i int) []string {
				r := kl.Running(i)
				sort.Strings(r)
				return r
			}
			require.Eventually(t, func() bool {
				return len(kl.Running(0)) == 2 && len(kl.Running(1)) == 2 && len(kl.Running(2)) == 1 &&
					s.Nodes()[0].Allocatable.CPUMillis == 200 && s.Nodes()[2].Allocatable.CPUMillis == 100
			}, 10*time.Second, 10*time.Millisecond, "every pod runs, and the scheduler's cache has them")

			// A medium pod of 2000m: node-000 and node-001 are candidates,
			// node-002's pod has its priority. The extender vetoes node-000.
			node, err := s.ScheduleOne(ctx, prioritized("mid-f", 1000, 2000))
			require.NoError(t, err)
			assert.Equal(t, "node-001", node)
			nodes, victims, prio := x.lastAsked(t)
			assert.Equal(t, []string{"node-000", "node-001"}, nodes, "the node of equal priority is no candidate")
			assert.Equal(t, int32(1000), prio)
			assert.Equal(t, map[string]int32{"low-d": 100}, victims["node-001"], "one victim makes room: the 1900m one")
			d := <-decided
			e := <-evicted
			assert.Equal(t, "node-001", d.Node)
			assert.Equal(t, []string{"low-d"}, uids(d.Victims))
			assert.Equal(t, d.Node, e.Node, "the node controller evicted where the scheduler decided")
			assert.Equal(t, uids(d.Victims), storeUIDs(e.Victims), "and exactly the victims it decided on")
			assert.Equal(t, "mid-f", e.Preemptor.Pod.UID)
			assert.GreaterOrEqual(t, e.After.CPUMillis, int64(2000), "the eviction made room")
			require.Eventually(t, func() bool {
				return assert.ObjectsAreEqual([]string{"low-c", "mid-f"}, runningOn(1))
			}, 10*time.Second, 10*time.Millisecond, "the victim stopped on its kubelet; the preemptor runs there")
			assert.Equal(t, []string{"low-a", "low-b"}, runningOn(0), "nothing was evicted where the extender vetoed")
			require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{"low-c", "mid-f"}, cachedPods(s, "node-001")) },
				10*time.Second, 10*time.Millisecond, "the scheduler's cache has the preemptor")

			// A medium pod of 3700m: only node-000 would do (both of its
			// pods evicted), and it is vetoed; node-002's pod has the same
			// priority and is not evicted.
			_, err = s.ScheduleOne(ctx, prioritized("mid-g", 1000, 3700))
			assert.ErrorIs(t, err, scheduler.ErrNoNode)
			nodes, _, _ = x.lastAsked(t)
			assert.Equal(t, []string{"node-000"}, nodes)
			assert.Equal(t, []string{"mid-e"}, runningOn(2), "a pod of equal priority is never evicted")

			// A high pod of 3700m: on node-002 one victim does (mid-e), on
			// node-001 it takes two; fewest victims wins.
			node, err = s.ScheduleOne(ctx, prioritized("high-h", 10000, 3700))
			require.NoError(t, err)
			assert.Equal(t, "node-002", node)
			nodes, victims, _ = x.lastAsked(t)
			assert.Equal(t, []string{"node-000", "node-001", "node-002"}, nodes)
			assert.Equal(t, map[string]int32{"low-c": 100, "mid-f": 1000}, victims["node-001"])
			d, e = <-decided, <-evicted
			assert.Equal(t, []string{"mid-e"}, uids(d.Victims))
			assert.Equal(t, "node-002", e.Node)
			assert.Equal(t, []string{"mid-e"}, storeUIDs(e.Victims))
			require.Eventually(t, func() bool {
				return assert.ObjectsAreEqual([]string{"high-h"}, runningOn(2))
			}, 10*time.Second, 10*time.Millisecond)
			assert.Empty(t, evicted, "no other eviction")
			assert.Equal(t, int64(2), s.Stats().Preempted.Load())
			assert.Equal(t, int64(2), s.Stats().Victims.Load())
			for _, p := range nc.Pods() {
				if p.UID == "high-h" {
					assert.Equal(t, int64(10000), p.Priority, "the binding carried the pod's priority")
				}
			}
		})
	}
}

// TestSchedulerPreemptsAsALockstepExtenderAgrees: the sample's own
// extender, at 1.0.0 and at 2.0.0 with a handshake, takes part in
// preemption too (ProcessPreemption): it refuses candidates in its
// maintenance window (node-001 here), so the scheduler evicts elsewhere,
// though node-001 needs fewer victims.
func TestSchedulerPreemptsAsALockstepExtenderAgrees(t *testing.T) {
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			sys := startSystem(t, api, false)
			s := newPreemptingScheduler(t, sys, api)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			bindAll(ctx, t, s, []placed{
				{prioritized("a1", 100, 1900), "node-000"}, {prioritized("a2", 100, 1900), "node-000"},
				{prioritized("b1", 100, 3800), "node-001"},
				{prioritized("c1", 100, 1900), "node-002"}, {prioritized("c2", 100, 1900), "node-002"},
			})
			require.Eventually(t, func() bool {
				for _, h := range s.Nodes() {
					if h.Allocatable.CPUMillis != 0 {
						return false
					}
				}
				return len(s.Nodes()) == 3
			}, 10*time.Second, 10*time.Millisecond)
			node, err := s.ScheduleOne(ctx, prioritized("high", 1000, 3000))
			require.NoError(t, err)
			assert.Equal(t, "node-000", node, "node-001 needs one victim, but is in maintenance; node-000 comes first of the others")
			var left []string
			for _, p := range sys.nc.Pods() {
				left = append(left, p.UID)
			}
			sort.Strings(left)
			assert.Equal(t, []string{"b1", "c1", "c2", "high"}, left, "both of node-000's pods were evicted, and only they")
		})
	}
}

// newPreemptingScheduler is a scheduler calling the system's lockstep
// extender, with a preemptVerb.
func newPreemptingScheduler(t *testing.T, sys system, api string) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{API: api, Logger: frameworktest.Quiet(),
		NodeHealth: framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{sys.nodeController}, Logger: frameworktest.Quiet()},
		Extenders: []scheduler.ExtenderConfig{{Name: "spread", Preempt: true, Weight: 1,
			Client: framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Endpoints: []string{sys.extender}, Logger: frameworktest.Quiet()}}}})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.Eventually(t, func() bool { return s.Ready() == nil && len(s.Candidates()) == 3 }, 10*time.Second, 10*time.Millisecond)
	return s
}

func runKubelet(t *testing.T, cfg kubelet.Config) *kubelet.Kubelet {
	t.Helper()
	k, err := kubelet.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; k.Close() })
	return k
}

// prioritized is a pod of the priority, requesting cpu millicores.
func prioritized(uid string, priority, cpu int64) extv2.PodRef {
	return extv2.PodRef{Namespace: "default", Name: uid, UID: uid, Priority: &priority,
		Requests: extv2.Requests{CPUMillis: cpu, MemoryBytes: 64 << 20}}
}

// placed is a pod and the node it is bound to.
type placed struct {
	pod  extv2.PodRef
	node string
}

// bindAll binds each pod at the node controller, as the scheduler posts
// a binding.
func bindAll(ctx context.Context, t *testing.T, s *scheduler.Scheduler, pods []placed) {
	t.Helper()
	for _, p := range pods {
		require.NoError(t, s.PostBinding(ctx, p.pod, p.node))
	}
}

// cachedPods are the UIDs of the pods the scheduler's cache holds bound
// to node, sorted.
func cachedPods(s *scheduler.Scheduler, node string) []string {
	for _, h := range s.Nodes() {
		if h.NodeName == node {
			return uids(h.Pods)
		}
	}
	return nil
}

func uids(pods []nhv2.BoundPod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Pod.UID
	}
	sort.Strings(out)
	return out
}

func storeUIDs(pods []nodecontroller.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.UID
	}
	sort.Strings(out)
	return out
}

// SelectVictims leaves as few victims as kube-scheduler's
// SelectVictimsOnNode: lower-priority pods only, the most important
// spared while the pod still fits.
func TestSelectVictims(t *testing.T) {
	bound := func(uid string, priority, cpu int64) nhv2.BoundPod {
		return nhv2.BoundPod{Pod: nhv2.PodRef{Namespace: "default", Name: uid, UID: uid}, Priority: priority,
			Requests: nhv2.PodRequests{CPUMillis: cpu}}
	}
	pod := func(priority, cpu int64) extv2.PodRef {
		return extv2.PodRef{Name: "p", UID: "p", Priority: &priority, Requests: extv2.Requests{CPUMillis: cpu}}
	}
	node := func(leftCPU int64, pods ...nhv2.BoundPod) nhv2.NodeHealth {
		return nhv2.NodeHealth{NodeName: "n", Allocatable: nhv2.Resources{CPUMillis: leftCPU, MemoryBytes: 1 << 30, Pods: 100}, Pods: pods}
	}
	for _, tc := range []struct {
		name    string
		pod     extv2.PodRef    // the preemptor
		node    nhv2.NodeHealth // the node, what is left of it and its pods
		victims []string        // the victims, sorted; nil with ok false for no candidate
		ok      bool            // evicting makes room
	}{
		{"fits already", pod(1000, 100), node(200, bound("a", 0, 100)), nil, false},
		{"equal priority is no victim", pod(100, 500), node(0, bound("a", 100, 3800)), nil, false},
		{"higher priority is no victim", pod(100, 500), node(0, bound("a", 1000, 3800)), nil, false},
		{"not enough even with all gone", pod(1000, 3000), node(0, bound("a", 100, 1000), bound("b", 1000, 2800)), nil, false},
		{"one of two", pod(1000, 1000), node(0, bound("a", 100, 1900), bound("b", 100, 1900)), []string{"b"}, true},
		{"lowest priority goes first", pod(1000, 1000), node(0, bound("a", 500, 1900), bound("b", 100, 1900)), []string{"b"}, true},
		{"the small one is spared", pod(1000, 1500), node(100, bound("a", 100, 200), bound("b", 100, 1500)), []string{"b"}, true},
		{"both", pod(1000, 3000), node(0, bound("a", 100, 1900), bound("b", 100, 1900)), []string{"a", "b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			victims, ok := scheduler.SelectVictims(tc.pod, tc.node)
			assert.Equal(t, tc.ok, ok)
			if tc.victims == nil {
				assert.Empty(t, victims)
				return
			}
			assert.Equal(t, tc.victims, uids(victims))
		})
	}
}
