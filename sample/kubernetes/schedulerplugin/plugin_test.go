package schedulerplugin

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/sample/internal/extender"
)

// cycleState is the part of the scheduler's CycleState the plugin uses:
// the real one lives in k8s.io/kubernetes, which this module does not
// require.
type cycleState struct {
	fwk.CycleState
	data map[fwk.StateKey]fwk.StateData
}

func newCycleState() *cycleState { return &cycleState{data: map[fwk.StateKey]fwk.StateData{}} }

func (c *cycleState) Read(k fwk.StateKey) (fwk.StateData, error) {
	if d, ok := c.data[k]; ok {
		return d, nil
	}
	return nil, fwk.ErrNotFound
}

func (c *cycleState) Write(k fwk.StateKey, d fwk.StateData) { c.data[k] = d }

// nodeInfo is the part of NodeInfo the plugin uses: the node.
type nodeInfo struct {
	fwk.NodeInfo
	node *corev1.Node
}

func (n nodeInfo) Node() *corev1.Node { return n.node }

func nodes(names ...string) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, len(names))
	for i, n := range names {
		out[i] = nodeInfo{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}}
	}
	return out
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}}}
}

// startExtender serves the sample extender over TLS on 127.0.0.1, counting
// the calls it handles.
func startExtender(t *testing.T, tlsCfg *tls.Config, cfg extender.Config) (url string, calls func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	cfg.Applied = func(context.Context) { mu.Lock(); n++; mu.Unlock() }
	cfg.Logger = frameworktest.Quiet()
	e, err := extender.New(cfg)
	require.NoError(t, err)
	srv, err := e.Server(framework.ServerConfig{Component: "extender", Release: "2.0.0", TLSConfig: tlsCfg, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
	})
	return "https://" + l.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func newPlugin(t *testing.T, tlsCfg *tls.Config, args *Args, bind func(context.Context, *corev1.Binding) error) *Plugin {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := NewWith(ctx, Config{Args: args, TLSConfig: tlsCfg, Bind: bind, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		// The client closes its sessions when the context ends.
		require.Eventually(t, func() bool { return p.Client().Ready() != nil }, 10*time.Second, 5*time.Millisecond)
	})
	return p
}

// With an extender of each generation, the plugin asks it once per pod
// and cycle for Filter and once for Prioritize, however many nodes there
// are; Filter and Score read its answers for each node; Bind has it bind
// and then posts the Binding.
func TestPluginAsksTheExtenderOncePerCycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  extender.Config // the extender's generation
	}{
		{"v1", extender.Config{API: "v1"}},
		{"v2", extender.Config{API: "v2"}},
		{"v2 fork", extender.Config{API: "v2", Fork: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tlsc := frameworktest.NewTLS(t, "scheduler")
			tc.cfg.Maintenance = []string{"node-b"}
			url, calls := startExtender(t, tlsc.Server, tc.cfg)
			var bound []*corev1.Binding
			p := newPlugin(t, tlsc.Client, &Args{Endpoints: []string{url}}, func(_ context.Context, b *corev1.Binding) error {
				bound = append(bound, b)
				return nil
			})
			ctx := context.Background()
			pod, state, all := testPod("web-1"), newCycleState(), nodes("node-a", "node-b", "node-c")

			_, st := p.PreFilter(ctx, state, pod, all)
			require.True(t, st.IsSuccess(), st.AsError())
			assert.Equal(t, 1, calls(), "one Filter call for three nodes")
			assert.True(t, p.Filter(ctx, state, pod, all[0]).IsSuccess())
			refused := p.Filter(ctx, state, pod, all[1])
			assert.Equal(t, fwk.Unschedulable, refused.Code())
			assert.Contains(t, refused.Message(), "maintenance")
			assert.True(t, p.Filter(ctx, state, pod, all[2]).IsSuccess())
			assert.Equal(t, 1, calls(), "Filter reads the cycle's answer")

			feasible := []fwk.NodeInfo{all[0], all[2]}
			require.True(t, p.PreScore(ctx, state, pod, feasible).IsSuccess())
			for _, n := range feasible {
				score, st := p.Score(ctx, state, pod, n)
				require.True(t, st.IsSuccess())
				assert.Equal(t, fwk.MaxNodeScore, score, "nothing is bound yet: every node scores highest")
			}
			assert.Equal(t, 2, calls(), "one Prioritize call for two nodes")

			require.True(t, p.Bind(ctx, state, pod, "node-c").IsSuccess())
			require.Len(t, bound, 1)
			assert.Equal(t, "node-c", bound[0].Target.Name)
			assert.Equal(t, pod.UID, bound[0].UID)

			// The extender remembers the placement: the next pod scores
			// node-c below node-a, and the first pod may not go elsewhere.
			state = newCycleState()
			require.True(t, p.PreScore(ctx, state, testPod("web-2"), feasible).IsSuccess())
			a, _ := p.Score(ctx, state, pod, feasible[0])
			c, _ := p.Score(ctx, state, pod, feasible[1])
			assert.Greater(t, a, c)
			conflict := p.Bind(ctx, state, pod, "node-a")
			assert.Equal(t, fwk.Error, conflict.Code(), "an extender that bound the pod elsewhere refuses")
			assert.Len(t, bound, 1, "a refused binding is not posted")
		})
	}
}

// No extender: under Retry a cycle fails with an error, which puts the
// pod in the backoff queue, after no more than CallTimeout; under Ignore
// the plugin steps aside (Skip) in the same bound.
func TestPolicyWhenTheExtenderIsAbsent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	absent := "https://" + l.Addr().String()
	require.NoError(t, l.Close())
	tlsc := frameworktest.NewTLS(t, "scheduler")
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		policy string
		want   fwk.Code
	}{{Retry, fwk.Error}, {Ignore, fwk.Skip}} {
		t.Run(tc.policy, func(t *testing.T) {
			p := newPlugin(t, tlsc.Client, &Args{Endpoints: []string{absent}, OnUnavailable: tc.policy,
				CallTimeout: metav1.Duration{Duration: timeout}}, nil)
			start := time.Now()
			_, st := p.PreFilter(context.Background(), newCycleState(), testPod("web-1"), nodes("node-a"))
			took := time.Since(start)
			assert.Equal(t, tc.want, st.Code(), st.Message())
			assert.GreaterOrEqual(t, took, timeout, "the call waits for an extender to appear")
			assert.Less(t, took, timeout+5*time.Second, "and no longer than its bound (loose: a loaded machine)")
			st = p.PreScore(context.Background(), newCycleState(), testPod("web-1"), nodes("node-a"))
			assert.Equal(t, tc.want, st.Code())
		})
	}
}

// The plugin's arguments come from a KubeSchedulerConfiguration as
// runtime.Unknown, JSON or YAML, read strictly, with defaults.
func TestDecodeArgs(t *testing.T) {
	args, err := DecodeArgs(&runtime.Unknown{Raw: []byte(`{"endpoints":["https://127.0.0.1:8443"],"callTimeout":"500ms"}`),
		ContentType: runtime.ContentTypeJSON})
	require.NoError(t, err)
	assert.Equal(t, 500*time.Millisecond, args.CallTimeout.Duration)
	assert.Equal(t, Retry, args.OnUnavailable)
	assert.Equal(t, "2.0.0", args.Release)

	args, err = DecodeArgs(&runtime.Unknown{Raw: []byte("endpoints: [https://127.0.0.1:8443]\nonUnavailable: Ignore\n"),
		ContentType: runtime.ContentTypeYAML})
	require.NoError(t, err)
	assert.Equal(t, Ignore, args.OnUnavailable)
	assert.Equal(t, DefaultCallTimeout, args.CallTimeout.Duration)

	for _, bad := range []string{
		`{}`, // no endpoints
		`{"endpoints":["https://x"],"service":{"namespace":"lockstep","name":"extender"}}`, // both
		`{"service":{"name":"extender"}}`,
		`{"endpoints":["https://x"],"onUnavailable":"Wait"}`,
		`{"endpoints":["https://x"],"timeout":"1s"}`, // unknown field
		`{"endpoints":["https://x"],"certFile":"a.crt"}`,
	} {
		_, err := DecodeArgs(&runtime.Unknown{Raw: []byte(bad)})
		assert.Error(t, err, bad)
	}
}
