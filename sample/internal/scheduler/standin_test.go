package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// standIn is a scheduler extender as real ones are written: only against
// k8s.io/kube-scheduler/extender/v1 and k8s.io/api/core/v1, decoded with
// encoding/json, at verbs of its own. It needs whole Node objects
// (nodeCacheCapable false): it keeps the nodes labelled
// topology.kubernetes.io/zone=a, scores them from their tier label and its
// own bindings, and binds pods. It remembers the node it decided on for
// each pod, to be compared with where the scheduler put it.
type standIn struct {
	t *testing.T

	mu       sync.Mutex
	bound    map[string]int              // pods bound per node
	decided  map[string]string           // pod UID → the node with the best score
	boundTo  map[string]string           // pod UID → node
	lastArgs *extenderv1.ExtenderArgs    // the last filter request
	scores   map[string]map[string]int64 // pod UID → scores
}

func (x *standIn) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ext/keep-zone-a", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res := extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
		if args.Nodes == nil {
			// What a real extender that needs nodes answers.
			res.Error = "this extender needs Nodes: configure it nodeCacheCapable: false"
		} else {
			res.Nodes = &corev1.NodeList{}
			for _, n := range args.Nodes.Items {
				if n.Labels["topology.kubernetes.io/zone"] == "a" {
					res.Nodes.Items = append(res.Nodes.Items, n)
				} else {
					res.FailedNodes[n.Name] = "not in zone a"
				}
			}
		}
		x.mu.Lock()
		x.lastArgs = &args
		x.mu.Unlock()
		_ = json.NewEncoder(w).Encode(&res)
	})
	mux.HandleFunc("POST /ext/score-nodes", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Nodes == nil {
			http.Error(w, "want ExtenderArgs with Nodes", http.StatusBadRequest)
			return
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		list := extenderv1.HostPriorityList{}
		best, bestScore := "", int64(-1)
		scores := map[string]int64{}
		for _, n := range args.Nodes.Items {
			score := map[string]int64{"gold": 10, "silver": 6}[n.Labels["example.com/tier"]] - int64(x.bound[n.Name])
			score = max(0, min(score, extenderv1.MaxExtenderPriority))
			list = append(list, extenderv1.HostPriority{Host: n.Name, Score: score})
			scores[n.Name] = score
			if score > bestScore || score == bestScore && n.Name < best {
				best, bestScore = n.Name, score
			}
		}
		x.decided[string(args.Pod.UID)] = best
		x.scores[string(args.Pod.UID)] = scores
		_ = json.NewEncoder(w).Encode(&list)
	})
	mux.HandleFunc("POST /ext/may-preempt", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderPreemptionArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.NodeNameToVictims == nil || args.Pod == nil {
			http.Error(w, "want ExtenderPreemptionArgs with whole victims", http.StatusBadRequest)
			return
		}
		// Agrees to preempt only on gold nodes, and only the first victim.
		res := extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{}}
		for node, v := range args.NodeNameToVictims {
			if node == "node-000" && len(v.Pods) > 0 {
				res.NodeNameToMetaVictims[node] = &extenderv1.MetaVictims{Pods: []*extenderv1.MetaPod{{UID: string(v.Pods[0].UID)}}, NumPDBViolations: v.NumPDBViolations}
			}
		}
		_ = json.NewEncoder(w).Encode(&res)
	})
	mux.HandleFunc("POST /ext/bind-pod", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderBindingArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		x.bound[args.Node]++
		x.boundTo[string(args.PodUID)] = args.Node
		_ = json.NewEncoder(w).Encode(&extenderv1.ExtenderBindingResult{})
	})
	return mux
}

// standInConfig is the scheduler configuration that names the stand-in.
const standInConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
  - urlPrefix: %s/ext
    filterVerb: keep-zone-a
    prioritizeVerb: score-nodes
    bindVerb: bind-pod
    preemptVerb: may-preempt
    weight: 2
    nodeCacheCapable: false
    httpTimeout: 5s
`

// TestSchedulerPlacesPodsAsAKubernetesExtenderDecides runs the sample's
// node controller and kubelets (nodes labelled with --node-labels and
// tainted with --register-with-taints) and the sample scheduler configured
// by a KubeSchedulerConfiguration to call the stand-in: every pod goes
// where the stand-in decided, the stand-in is sent whole nodes with what
// their kubelets reported, and a real Pod with its labels, requests and
// tolerations.
func TestSchedulerPlacesPodsAsAKubernetesExtenderDecides(t *testing.T) {
	for _, tc := range []struct {
		api  string
		fork bool
	}{{"v1", false}, {"v2", true}} {
		t.Run(tc.api, func(t *testing.T) {
			nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", Fork: true, Server: serverConfig("nodecontroller", "1.31.0"), Logger: frameworktest.Quiet()})
			require.NoError(t, err)
			ncURL := serve(t, nc.Server())
			for _, k := range []struct {
				first, nodes   int
				labels, taints string
			}{
				{0, 1, "topology.kubernetes.io/zone=a,example.com/tier=gold", ""},
				{1, 2, "topology.kubernetes.io/zone=a,example.com/tier=silver", ""},
				{3, 2, "topology.kubernetes.io/zone=b,example.com/tier=gold", ""},
				{5, 1, "topology.kubernetes.io/zone=a,example.com/tier=gold", "dedicated=gpu:NoSchedule"},
			} {
				labels, err := kubelet.ParseNodeLabels(k.labels)
				require.NoError(t, err)
				taints, err := kubelet.ParseTaints(k.taints)
				require.NoError(t, err)
				kl, err := kubelet.New(kubelet.Config{API: "v2", Nodes: k.nodes, FirstNode: k.first, Labels: labels, Taints: taints,
					ChangeEvery: -1, Logger: frameworktest.Quiet(),
					Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{ncURL}, Logger: frameworktest.Quiet()}})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); kl.Run(ctx) }()
				t.Cleanup(func() { cancel(); <-done; kl.Close() })
			}

			x := &standIn{t: t, bound: map[string]int{}, decided: map[string]string{}, boundTo: map[string]string{}, scores: map[string]map[string]int64{}}
			ext := httptest.NewServer(x.routes())
			t.Cleanup(ext.Close)
			kc, warnings, err := scheduler.ParseConfig([]byte(fmt.Sprintf(standInConfig, ext.URL)))
			require.NoError(t, err)
			assert.Empty(t, warnings)
			base := framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Logger: frameworktest.Quiet()}
			extenders, err := scheduler.ExtendersFromConfig(kc, base)
			require.NoError(t, err)
			nh := base
			nh.Endpoints = []string{ncURL}
			s, err := scheduler.New(scheduler.Config{API: tc.api, Fork: tc.fork, NodeHealth: nh, Extenders: extenders, Logger: frameworktest.Quiet()})
			require.NoError(t, err)
			t.Cleanup(s.Close)
			require.Eventually(t, func() bool { return s.Ready() == nil && len(s.Candidates()) == 6 }, eventWait, 10*time.Millisecond)

			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			gpu := extv2.TolerationFromCore(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
			placed := map[string]int{}
			for i := 0; i < 24; i++ {
				pod := s.NewPod()
				if i%4 == 3 {
					pod.Tolerations = []extv2.Toleration{gpu}
				}
				node, err := s.ScheduleOne(ctx, pod)
				require.NoError(t, err)
				x.mu.Lock()
				assert.Equal(t, x.decided[pod.UID], node, "pod %d: the scheduler placed it where the extender scored best: %v", i, x.scores[pod.UID])
				assert.Equal(t, node, x.boundTo[pod.UID], "pod %d: the extender bound it there", i)
				args := x.lastArgs
				x.mu.Unlock()
				placed[node]++

				// What the extender was sent: a real Pod, and whole nodes.
				require.NotNil(t, args.Pod)
				assert.Equal(t, pod.Name, args.Pod.Name)
				assert.Equal(t, "web", args.Pod.Labels["app"])
				cpu := args.Pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
				assert.Equal(t, pod.Requests.CPUMillis, cpu.MilliValue())
				assert.Equal(t, len(pod.Tolerations), len(args.Pod.Spec.Tolerations))
				assert.Nil(t, args.NodeNames, "nodeCacheCapable false: Nodes, not NodeNames")
				var names []string
				for _, n := range args.Nodes.Items {
					names = append(names, n.Name)
				}
				sort.Strings(names)
				want := "node-000 node-001 node-002 node-003 node-004"
				if len(pod.Tolerations) > 0 {
					want += " node-005"
				}
				assert.Equal(t, want, strings.Join(names, " "), "the scheduler keeps tainted nodes from pods that do not tolerate them")
			}
			assert.Zero(t, placed["node-003"]+placed["node-004"], "zone b is filtered out: %v", placed)
			assert.NotZero(t, placed["node-005"], "the tainted node takes pods that tolerate it: %v", placed)
			assert.NotZero(t, placed["node-001"]+placed["node-002"], "silver nodes win once gold ones are loaded: %v", placed)

			// Preemption: whole victims go out, victims by UID come back.
			v1, v2, v3 := s.NewPod(), s.NewPod(), s.NewPod()
			two := int64(2)
			res, err := s.Preempt(ctx, "extender-0", s.NewPod(), []extv2.PreemptRequestCandidatesItem{
				{Node: "node-000", Victims: []extv2.PodRef{v1, v2}, PdbViolations: &two},
				{Node: "node-001", Victims: []extv2.PodRef{v3}},
			})
			require.NoError(t, err)
			assert.Equal(t, []extv2.PreemptResponseCandidatesItem{{Node: "node-000", Victims: []string{v1.UID}, PdbViolations: &two}}, res.Candidates)

			node := x.lastArgs.Nodes.Items[0]
			assert.Equal(t, "node-000", node.Labels["kubernetes.io/hostname"])
			assert.Equal(t, "gold", node.Labels["example.com/tier"])
			capacity := node.Status.Capacity[corev1.ResourceCPU]
			assert.Equal(t, "4", capacity.String())
			assert.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-000"})
			require.NotEmpty(t, node.Status.Conditions)
			assert.Equal(t, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}, node.Status.Conditions[0])
			for _, n := range x.lastArgs.Nodes.Items {
				if n.Name == "node-005" {
					assert.Equal(t, []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}, n.Spec.Taints)
				}
			}
		})
	}
}
