package scheduler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
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
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// Answers as public Kubernetes extenders give them, each reproduced by a
// handler written against k8s.io/kube-scheduler/extender/v1 and
// encoding/json, and named after the extender it was seen from. The
// sample scheduler must read each as kube-scheduler reads it.

// startNodes runs a node controller and a kubelet of three nodes.
func startNodes(t *testing.T) string {
	t.Helper()
	nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", Fork: true, Server: serverConfig("nodecontroller", "1.31.0"), Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	url := serve(t, nc.Server())
	k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: 3, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{url}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; k.Close() })
	return url
}

// configured returns a scheduler at api (v2 in fork mode) whose extenders
// are those of a KubeSchedulerConfiguration's extenders list, once it
// sees the three nodes.
func configured(t *testing.T, nodes, api string, logger *slog.Logger, extenders string) *scheduler.Scheduler {
	t.Helper()
	kc, _, err := scheduler.ParseConfig([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n" + extenders))
	require.NoError(t, err)
	base := framework.ClientConfig{Component: "scheduler", Release: "1.31.0", Logger: frameworktest.Quiet()}
	ecs, err := scheduler.ExtendersFromConfig(kc, base)
	require.NoError(t, err)
	nh := base
	nh.Endpoints = []string{nodes}
	s, err := scheduler.New(scheduler.Config{API: api, Fork: api == "v2", NodeHealth: nh, Extenders: ecs, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.Eventually(t, func() bool { return len(s.Candidates()) == 3 }, eventWait, 10*time.Millisecond)
	return s
}

// decodeArgs decodes a request as an extender does, or answers 400.
func decodeArgs(w http.ResponseWriter, r *http.Request) (*extenderv1.ExtenderArgs, bool) {
	var args extenderv1.ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil || args.Pod == nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return nil, false
	}
	return &args, true
}

// TestSchedulerTakesANullScoreList: topolvm's prioritize answers null for
// a pod that asks for none of its storage (its scoreNodes returns a nil
// HostPriorityList, which encoding/json writes as null); kube-scheduler
// decodes it as no scores.
func TestSchedulerTakesANullScoreList(t *testing.T) {
	nodes := startNodes(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /predicate", func(w http.ResponseWriter, r *http.Request) {
		if args, ok := decodeArgs(w, r); ok {
			_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{Nodes: args.Nodes})
		}
	})
	mux.HandleFunc("POST /prioritize", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := decodeArgs(w, r); ok {
			var none extenderv1.HostPriorityList
			_ = json.NewEncoder(w).Encode(none)
		}
	})
	ext := httptest.NewServer(mux)
	t.Cleanup(ext.Close)
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			// A failed prioritize fails no pod (its scores are left out),
			// so the log is what tells a null taken from one refused.
			var logged records
			s := configured(t, nodes, api, logged.logger(), fmt.Sprintf(`
  - urlPrefix: %s
    filterVerb: predicate
    prioritizeVerb: prioritize
    nodeCacheCapable: false
    weight: 100
`, ext.URL))
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			_, err := s.ScheduleOne(ctx, s.NewPod())
			require.NoError(t, err)
			assert.NotContains(t, logged.String(), "failed to prioritize", "the null score list was refused")
		})
	}
}

// TestSchedulerReadsTheFilterAnswerInTheFormItAsked: kube-scheduler reads
// the feasible nodes of an extender that does not cache nodes from Nodes,
// and from NodeNames only for one that does (nodeCacheCapable), where a
// name it did not send is an error. Telemetry Aware Scheduling answers
// both, its NodeNames with a trailing empty name (it splits a string of
// names each followed by a space), so only Nodes is right.
func TestSchedulerReadsTheFilterAnswerInTheFormItAsked(t *testing.T) {
	nodes := startNodes(t)
	mux := http.NewServeMux()
	// Keeps every node but node-000, as TAS's filterNodes answers.
	mux.HandleFunc("POST /scheduler/filter", func(w http.ResponseWriter, r *http.Request) {
		args, ok := decodeArgs(w, r)
		if !ok || args.Nodes == nil {
			http.Error(w, "no nodes", http.StatusNotFound)
			return
		}
		var kept []corev1.Node
		names := ""
		failed := extenderv1.FailedNodesMap{}
		for _, n := range args.Nodes.Items {
			if n.Name == "node-000" {
				failed[n.Name] = "Node violates"
			} else {
				kept = append(kept, n)
				names += n.Name + " "
			}
		}
		split := strings.Split(names, " ")
		_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{Nodes: &corev1.NodeList{Items: kept}, NodeNames: &split, FailedNodes: failed})
	})
	// Names a node it was not sent, first.
	mux.HandleFunc("POST /cached/filter", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := decodeArgs(w, r); ok {
			_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{NodeNames: &[]string{"a-node-it-was-not-sent", "node-002"}})
		}
	})
	ext := httptest.NewServer(mux)
	t.Cleanup(ext.Close)
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			s := configured(t, nodes, api, frameworktest.Quiet(), fmt.Sprintf(`
  - urlPrefix: %s
    filterVerb: scheduler/filter
    nodeCacheCapable: false
`, ext.URL))
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			for i := 0; i < 4; i++ {
				node, err := s.ScheduleOne(ctx, s.NewPod())
				require.NoError(t, err)
				assert.Contains(t, []string{"node-001", "node-002"}, node)
			}

			s = configured(t, nodes, api, frameworktest.Quiet(), fmt.Sprintf(`
  - urlPrefix: %s/cached
    filterVerb: filter
    nodeCacheCapable: true
`, ext.URL))
			_, err := s.ScheduleOne(ctx, s.NewPod())
			assert.ErrorContains(t, err, `"a-node-it-was-not-sent", which it was not sent`)
		})
	}
}

// records is a slog handler that keeps what is logged.
type records struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *records) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.buf.Write(p)
	}), nil))
}

func (r *records) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestSchedulerDoesNotWaitForAFailingKubernetesExtender: kube-scheduler
// calls an extender once per verb, and goes on without it at once when it
// is ignorable and fails (logging why), or fails the pod with why. The
// extenders: one whose port is closed, and one that answers 404 and a
// null body (TAS, for a pod without its policy label). Their httpTimeout
// is longer than the pod's own bound, so that a scheduler that waits for
// them fails the pod.
func TestSchedulerDoesNotWaitForAFailingKubernetesExtender(t *testing.T) {
	nodes := startNodes(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(nil)
	}))
	t.Cleanup(notFound.Close)
	for _, tc := range []struct {
		name, url string
		want      string // in the pod's error when not ignorable, and in the log when ignorable
	}{
		{"unreachable", closed, "connection refused"},
		{"404", notFound.URL, "HTTP 404"},
	} {
		for _, api := range []string{"v1", "v2"} {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				var logged records
				config := `
  - urlPrefix: %s
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: 1
    httpTimeout: 1m
    ignorable: %v
`
				s := configured(t, nodes, api, logged.logger(), fmt.Sprintf(config, tc.url, true))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_, err := s.ScheduleOne(ctx, s.NewPod())
				require.NoError(t, err, "an ignorable extender that fails is skipped")
				assert.Contains(t, logged.String(), "extender-0")
				assert.Contains(t, logged.String(), tc.want, "the scheduler says why it skipped the extender")

				s = configured(t, nodes, api, frameworktest.Quiet(), fmt.Sprintf(config, tc.url, false))
				_, err = s.ScheduleOne(ctx, s.NewPod())
				require.Error(t, err)
				assert.Contains(t, err.Error(), "extender extender-0: filter")
				assert.Contains(t, err.Error(), tc.want)
			})
		}
	}
}

// TestSchedulerSaysWhyExtendersFilteredOutEveryNode: topolvm's filter
// fails every node that has no capacity annotation for the pod's device
// class; kube-scheduler's error then counts the nodes by reason ("0/3
// nodes are available: 3 no capacity annotation"), and so must the
// sample's.
func TestSchedulerSaysWhyExtendersFilteredOutEveryNode(t *testing.T) {
	nodes := startNodes(t)
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		args, ok := decodeArgs(w, r)
		if !ok || args.Nodes == nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		res := extenderv1.ExtenderFilterResult{Nodes: &corev1.NodeList{}, FailedNodes: extenderv1.FailedNodesMap{}}
		for _, n := range args.Nodes.Items {
			res.FailedNodes[n.Name] = "no capacity annotation"
		}
		_ = json.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(ext.Close)
	assertNoNodeLeft(t, nodes, fmt.Sprintf(`
  - urlPrefix: %s
    filterVerb: predicate
    nodeCacheCapable: false
`, ext.URL), "filtered out by extenders: 3 no capacity annotation (extender-0)")
}

// assertNoNodeLeft checks, through both scheduler APIs, that a pod finds
// no node with extenders configured so, and that its error says want.
func assertNoNodeLeft(t *testing.T, nodes, extenders, want string) {
	t.Helper()
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			s := configured(t, nodes, api, frameworktest.Quiet(), extenders)
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			_, err := s.ScheduleOne(ctx, s.NewPod())
			require.ErrorIs(t, err, scheduler.ErrNoNode)
			assert.Contains(t, err.Error(), want)
		})
	}
}

// TestSchedulerNamesTheExtenderVerbAndURLThatFailed: gpushare-scheduler-
// extender's bind answers 500 with a JSON body and a trailing newline
// (encoding/json's Encoder) for a pod its API server does not know;
// kube-scheduler's error names the verb and the URL ("failed bind with
// extender at URL http://…/bind, code 500"). The sample's names the
// extender, the verb and the URL once each, with the body trimmed.
func TestSchedulerNamesTheExtenderVerbAndURLThatFailed(t *testing.T) {
	nodes := startNodes(t)
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gpushare-scheduler/filter":
			if args, ok := decodeArgs(w, r); ok {
				_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{NodeNames: args.NodeNames})
			}
		case "/gpushare-scheduler/bind":
			var args extenderv1.ExtenderBindingArgs
			_ = json.NewDecoder(r.Body).Decode(&args)
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(extenderv1.ExtenderBindingResult{Error: "/api/v1/namespaces/default/pods/" + args.PodName + " not found"})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ext.Close)
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			s := configured(t, nodes, api, frameworktest.Quiet(), fmt.Sprintf(`
  - urlPrefix: %s/gpushare-scheduler
    filterVerb: filter
    bindVerb: bind
    nodeCacheCapable: true
`, ext.URL))
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			pod := s.NewPod()
			_, err := s.ScheduleOne(ctx, pod)
			require.Error(t, err)
			url := ext.URL + "/gpushare-scheduler/bind"
			assert.Equal(t, "extender extender-0: bind: internal: "+url+` answered HTTP 500 Internal Server Error: {"Error":"/api/v1/namespaces/default/pods/`+pod.Name+` not found"}`, err.Error())
		})
	}
}

// scorer is a prioritize-only Kubernetes extender that scores nodes by
// name as scores says, on any scale (kgwe's GPU extender scores from 50 to
// 100), or answers status when it is not 200.
func scorer(t *testing.T, status int, scores map[string]int64) string {
	t.Helper()
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		args, ok := decodeArgs(w, r)
		if !ok {
			return
		}
		if status != http.StatusOK {
			http.Error(w, "no scores today", status)
			return
		}
		var list extenderv1.HostPriorityList
		for _, n := range *args.NodeNames {
			list = append(list, extenderv1.HostPriority{Host: n, Score: scores[n]})
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(ext.Close)
	return ext.URL
}

// TestSchedulerWeighsScoresAboveMaxExtenderPriorityAsKubeSchedulerDoes:
// kube-scheduler takes an extender's score as it is, multiplied by its
// weight and MaxNodeScore / MaxExtenderPriority (10), never clamped
// (prioritizeNodes in schedule_one.go), so an extender that scores from 0
// to 100 schedules pods, and outweighs one that scores from 0 to 10. With
// equal weights, node-000 gets 20×10 + 5×10 = 250, node-001 40×10 = 400,
// node-002 -5×10 + 10×10 = 50: node-001. A scheduler that clamped scores
// to 10 would rank node-000 first (10 + 5 against 10).
func TestSchedulerWeighsScoresAboveMaxExtenderPriorityAsKubeSchedulerDoes(t *testing.T) {
	nodes := startNodes(t)
	hundred := scorer(t, http.StatusOK, map[string]int64{"node-000": 20, "node-001": 40, "node-002": -5})
	ten := scorer(t, http.StatusOK, map[string]int64{"node-000": 5, "node-001": 0, "node-002": 10})
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			s := configured(t, nodes, api, frameworktest.Quiet(), fmt.Sprintf(`
  - urlPrefix: %s
    prioritizeVerb: prioritize
    weight: 1
    nodeCacheCapable: true
  - urlPrefix: %s
    prioritizeVerb: prioritize
    weight: 1
    nodeCacheCapable: true
`, hundred, ten))
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			node, err := s.ScheduleOne(ctx, s.NewPod())
			require.NoError(t, err)
			assert.Equal(t, "node-001", node)
		})
	}
}

// TestSchedulerLeavesOutTheScoresOfAnExtenderThatFailedToPrioritize:
// kube-scheduler places a pod without the scores of an extender whose
// prioritize failed, ignorable or not ("Failed to run extender's priority
// function. No score given by this extender.", prioritizeNodes in
// schedule_one.go); the scheduler says so in its log.
func TestSchedulerLeavesOutTheScoresOfAnExtenderThatFailedToPrioritize(t *testing.T) {
	nodes := startNodes(t)
	failing := scorer(t, http.StatusInternalServerError, nil)
	others := scorer(t, http.StatusOK, map[string]int64{"node-000": 1, "node-001": 2, "node-002": 10})
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			var logged records
			s := configured(t, nodes, api, logged.logger(), fmt.Sprintf(`
  - urlPrefix: %s
    prioritizeVerb: prioritize
    weight: 5
    nodeCacheCapable: true
  - urlPrefix: %s
    prioritizeVerb: prioritize
    weight: 1
    nodeCacheCapable: true
`, failing, others))
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			node, err := s.ScheduleOne(ctx, s.NewPod())
			require.NoError(t, err)
			assert.Equal(t, "node-002", node, "the other extender's scores decide")
			assert.Contains(t, logged.String(), "extender=extender-0")
			assert.Contains(t, logged.String(), "no scores today")
		})
	}
}

// TestSchedulerBindsWithoutAnIgnorableBinderThatFailed: kube-scheduler
// leaves a pod whose ignorable binder failed to the next binder, or to
// its default binding (extendersBinding in schedule_one.go); a binder
// that is not ignorable fails the pod.
func TestSchedulerBindsWithoutAnIgnorableBinderThatFailed(t *testing.T) {
	nodes := startNodes(t)
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(extenderv1.ExtenderBindingResult{Error: "binder is down"})
	}))
	t.Cleanup(ext.Close)
	config := `
  - urlPrefix: %s
    bindVerb: bind
    ignorable: %v
`
	for _, api := range []string{"v1", "v2"} {
		t.Run(api, func(t *testing.T) {
			var logged records
			s := configured(t, nodes, api, logged.logger(), fmt.Sprintf(config, ext.URL, true))
			ctx, cancel := context.WithTimeout(context.Background(), placeWait)
			defer cancel()
			_, err := s.ScheduleOne(ctx, s.NewPod())
			require.NoError(t, err)
			assert.Contains(t, logged.String(), "verb=bind")
			assert.Contains(t, logged.String(), "binder is down")

			s = configured(t, nodes, api, frameworktest.Quiet(), fmt.Sprintf(config, ext.URL, false))
			_, err = s.ScheduleOne(ctx, s.NewPod())
			assert.ErrorContains(t, err, "extender extender-0: bind: ")
		})
	}
}

// TestSchedulerCountsNodesFilteredOutWithoutAReason: tidb-scheduler
// (TiDB Operator) answers a filter whose HA predicate failed with no node
// and no failed node (its Filter breaks out of its predicates and returns
// the empty list); the pod's error says the extender left them out.
func TestSchedulerCountsNodesFilteredOutWithoutAReason(t *testing.T) {
	nodes := startNodes(t)
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := decodeArgs(w, r); ok {
			_ = json.NewEncoder(w).Encode(extenderv1.ExtenderFilterResult{Nodes: &corev1.NodeList{}})
		}
	}))
	t.Cleanup(ext.Close)
	assertNoNodeLeft(t, nodes, fmt.Sprintf(`
  - urlPrefix: %s/scheduler
    filterVerb: filter
    preemptVerb: preempt
`, ext.URL), "filtered out by extenders: 3 no reason given (extender-0)")
}

// An ignorable extender is skipped when it fails, but not once the pod's
// own time has run out: skipping it then logged a skip that helped
// nothing, and the pod failed at a later step, blamed on that step.
func TestSchedulerDoesNotSkipAnIgnorableExtenderOnceThePodsTimeIsUp(t *testing.T) {
	nodes := startNodes(t)
	released := make(chan struct{})
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answers nothing until the pod's time is up
		case <-r.Context().Done():
		case <-released:
		}
	}))
	t.Cleanup(ext.Close)
	t.Cleanup(func() { close(released) })
	var logged records
	s := configured(t, nodes, "v1", logged.logger(), fmt.Sprintf(`
  - urlPrefix: %s
    filterVerb: predicate
    nodeCacheCapable: false
    ignorable: true
    httpTimeout: 30s
`, ext.URL))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := s.ScheduleOne(ctx, s.NewPod())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "extender extender-0: filter", "the pod's error names the step its time ran out in")
	assert.NotContains(t, logged.String(), "skipping an ignorable extender")
}
