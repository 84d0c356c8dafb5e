package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// gpuShare answers as gpushare-scheduler-extender does: it caches nodes
// (nodeCacheCapable), keeps those with GPU memory enough for the pod's
// aliyun.com/gpu-mem limit (node-002 only, here), answering both
// NodeNames and Nodes, and binds.
type gpuShare struct {
	mu    sync.Mutex
	seen  []*corev1.Pod // the pods filtered
	bound map[string]string
}

func (g *gpuShare) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /gpushare-scheduler/filter", func(w http.ResponseWriter, r *http.Request) {
		args, ok := decodeArgs(w, r)
		if !ok || args.NodeNames == nil {
			_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{Error: "cannot get node names"})
			return
		}
		g.mu.Lock()
		g.seen = append(g.seen, args.Pod)
		g.mu.Unlock()
		limit := args.Pod.Spec.Containers[0].Resources.Limits["aliyun.com/gpu-mem"]
		fit, failed, list := []string{}, extenderv1.FailedNodesMap{}, &corev1.NodeList{}
		for _, n := range *args.NodeNames {
			if n == "node-002" && limit.Value() <= 8 {
				fit = append(fit, n)
				list.Items = append(list.Items, corev1.Node{})
				list.Items[len(list.Items)-1].Name = n
			} else {
				failed[n] = "Insufficient GPU Memory in one device"
			}
		}
		_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{NodeNames: &fit, Nodes: list, FailedNodes: failed})
	})
	mux.HandleFunc("POST /gpushare-scheduler/bind", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderBindingArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		g.mu.Lock()
		g.bound[string(args.PodUID)] = args.Node
		g.mu.Unlock()
		_ = json.NewEncoder(w).Encode(extenderv1.ExtenderBindingResult{})
	})
	return mux
}

const gpuPodTemplate = `apiVersion: v1
kind: Pod
metadata:
  labels: {app: not-web, team: ml}
  annotations: {example.com/model: resnet}
spec:
  containers:
  - name: main
    image: registry.k8s.io/pause:3.10
    resources:
      limits: {aliyun.com/gpu-mem: "4", cpu: "8"}
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
`

// TestSchedulerCallsAManagedResourceExtenderForTemplatePods: an extender
// configured with managedResources, as gpushare-scheduler-extender
// publishes its configuration, is called only for pods that request its
// resource: never for the scheduler's own pods, and for every pod once a
// pod template gives them the resource. It sees what the template gives
// (the limit, the annotation, the labels, the toleration), decides where
// the pod goes, and binds it.
func TestSchedulerCallsAManagedResourceExtenderForTemplatePods(t *testing.T) {
	nodes := startNodes(t)
	g := &gpuShare{bound: map[string]string{}}
	ext := httptest.NewServer(g.routes())
	t.Cleanup(ext.Close)
	path := filepath.Join(t.TempDir(), "pod.yaml")
	require.NoError(t, os.WriteFile(path, []byte(gpuPodTemplate), 0o600))
	template, err := scheduler.LoadPodTemplate(path)
	require.NoError(t, err)

	kc, _, err := scheduler.ParseConfig([]byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: "%s/gpushare-scheduler"
  filterVerb: filter
  bindVerb: bind
  nodeCacheCapable: true
  managedResources:
  - name: aliyun.com/gpu-mem
    ignoredByScheduler: false
`, ext.URL)))
	require.NoError(t, err)
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			base := framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Logger: frameworktest.Quiet()}
			ecs, err := scheduler.ExtendersFromConfig(kc, base)
			require.NoError(t, err)
			nh := base
			nh.Endpoints = []string{nodes}
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			for _, template := range []*corev1.Pod{nil, template} {
				s, err := scheduler.New(scheduler.Config{API: api, Fork: api == "v2", NodeHealth: nh, Extenders: ecs, PodTemplate: template, Logger: frameworktest.Quiet()})
				require.NoError(t, err)
				t.Cleanup(s.Close)
				require.Eventually(t, func() bool { return len(s.Candidates()) == 3 }, eventWait, 10*time.Millisecond)
				g.mu.Lock()
				g.seen = nil
				g.mu.Unlock()
				pod := s.NewPod()
				node, err := s.ScheduleOne(ctx, pod)
				require.NoError(t, err)
				g.mu.Lock()
				seen, boundTo := g.seen, g.bound[pod.UID]
				g.mu.Unlock()
				if template == nil {
					assert.Empty(t, seen, "a pod that requests no aliyun.com/gpu-mem is not the extender's")
					assert.Empty(t, boundTo)
					continue
				}
				assert.Equal(t, "node-002", node, "where the extender keeps the pod")
				assert.Equal(t, "node-002", boundTo, "the extender binds it")
				require.Len(t, seen, 1)
				p := seen[0]
				limit := p.Spec.Containers[0].Resources.Limits["aliyun.com/gpu-mem"]
				assert.Equal(t, int64(4), limit.Value())
				_, cpuLimit := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
				assert.False(t, cpuLimit, "CPU and memory are the pod's own")
				assert.Equal(t, map[string]string{"example.com/model": "resnet"}, p.Annotations)
				assert.Equal(t, "web", p.Labels["app"], "the scheduler's own labels win")
				assert.Equal(t, "ml", p.Labels["team"])
				assert.Contains(t, p.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
			}
		})
	}
}

// recordingV2 is a 2.0.0 lockstep extender that keeps every node and
// remembers the pods it was asked to filter.
type recordingV2 struct {
	mu   sync.Mutex
	pods []extv2.PodRef
}

func (x *recordingV2) Filter(_ context.Context, req *extv2.FilterRequest) (*extv2.FilterResponse, error) {
	x.mu.Lock()
	x.pods = append(x.pods, req.Pod)
	x.mu.Unlock()
	return &extv2.FilterResponse{Feasible: req.Nodes}, nil
}

func (x *recordingV2) Prioritize(_ context.Context, req *extv2.PrioritizeRequest) (*extv2.PrioritizeResponse, error) {
	return &extv2.PrioritizeResponse{Scores: []extv2.NodeScore{}}, nil
}

func (x *recordingV2) Bind(context.Context, *extv2.BindRequest) (*extv2.BindResponse, error) {
	return &extv2.BindResponse{}, nil
}

func (x *recordingV2) ProcessPreemption(_ context.Context, req *extv2.PreemptRequest) (*extv2.PreemptResponse, error) {
	return &extv2.PreemptResponse{Candidates: []extv2.PreemptResponseCandidatesItem{}}, nil
}

// TestSchedulerGivesALockstepExtenderWhatThePodTemplateGives: a 2.0.0
// extender is sent the template's annotations and extended resources as
// a 1.0.0 one is (and a managedResources extender is called for them),
// not only its labels and tolerations.
func TestSchedulerGivesALockstepExtenderWhatThePodTemplateGives(t *testing.T) {
	nodes := startNodes(t)
	path := filepath.Join(t.TempDir(), "pod.yaml")
	require.NoError(t, os.WriteFile(path, []byte(gpuPodTemplate), 0o600))
	template, err := scheduler.LoadPodTemplate(path)
	require.NoError(t, err)
	x := &recordingV2{}
	srv, err := framework.NewServer(serverConfig("extender", "1.31.0"))
	require.NoError(t, err)
	extv2.Register(srv, x)
	url := serve(t, srv)
	base := framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Logger: frameworktest.Quiet()}
	nh, ext := base, base
	nh.Endpoints, ext.Endpoints = []string{nodes}, []string{url}
	s, err := scheduler.New(scheduler.Config{API: "v2", NodeHealth: nh, PodTemplate: template, Logger: frameworktest.Quiet(),
		Extenders: []scheduler.ExtenderConfig{{Name: "gpu", Client: ext, NodeCacheCapable: true, ManagedResources: []string{"aliyun.com/gpu-mem"}}}})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.Eventually(t, func() bool { return s.Ready() == nil && len(s.Candidates()) == 3 }, eventWait, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), placeWait)
	defer cancel()
	_, err = s.ScheduleOne(ctx, s.NewPod())
	require.NoError(t, err)
	x.mu.Lock()
	defer x.mu.Unlock()
	require.Len(t, x.pods, 1, "the extender manages a resource the template's pods request")
	p := x.pods[0]
	assert.Equal(t, map[string]string{"example.com/model": "resnet"}, p.Annotations)
	assert.Equal(t, map[string]int64{"aliyun.com/gpu-mem": 4}, p.Requests.Extended, "the limit counts as the request; CPU is the pod's own")
	assert.Equal(t, "ml", p.Labels["team"])
}
