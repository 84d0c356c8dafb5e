// Package scheduling runs the sample's scheduler plugin inside a real
// kube-scheduler (lockstep-kube-scheduler) against a real apiserver: the
// scheduler places real Pods on real Nodes where the sample extender,
// asked over lockstep, decides, through the extender's upgrade from v1
// to v2.
package scheduling

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-dev/lockstep/e2e/controlplane"
	"github.com/lockstep-dev/lockstep/framework/certs"
)

func TestMain(m *testing.M) {
	v, err := controlplane.Version("lockstep-kube-scheduler")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("lockstep-kube-scheduler --version:", v)
	os.Exit(m.Run())
}

// lockstepTLS is the lockstep side's PKI: the extender's serving
// certificate, the scheduler's client certificate and an operator's, all
// of one CA, in files.
type lockstepTLS struct {
	dir                         string
	extCert, extKey             string
	schedCert, schedKey, caFile string
	operator                    *tls.Config
}

func newLockstepTLS(t *testing.T, dir string) *lockstepTLS {
	t.Helper()
	dir = filepath.Join(dir, "lockstep")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	ca, err := certs.NewCA("lockstep e2e")
	require.NoError(t, err)
	out := &lockstepTLS{dir: dir}
	ext := ca.MustIssue(certs.Spec{Component: "extender", Server: true})
	out.extCert, out.extKey, out.caFile, err = ca.WriteFiles(dir, "extender", ext)
	require.NoError(t, err)
	sched := ca.MustIssue(certs.Spec{Component: "scheduler", Name: "lockstep-kube-scheduler"})
	out.schedCert, out.schedKey, _, err = ca.WriteFiles(dir, "scheduler", sched)
	require.NoError(t, err)
	op := ca.MustIssue(certs.Spec{Component: "operator", Name: "e2e"})
	out.operator = &tls.Config{Certificates: []tls.Certificate{op}, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	return out
}

// startExtender starts the sample's extender binary at addr, api "v1" or
// "v2 --fork", with node-2 in a maintenance window.
func startExtender(t *testing.T, plane *controlplane.Plane, tl *lockstepTLS, name, addr string, args ...string) *controlplane.Process {
	t.Helper()
	bin, err := controlplane.Bin("lockstep-sample-extender")
	require.NoError(t, err)
	proc := controlplane.StartProcess(t, plane.Dir, name, bin, append([]string{"--listen=" + addr,
		"--tls-cert=" + tl.extCert, "--tls-key=" + tl.extKey, "--tls-ca=" + tl.caFile,
		"--maintenance=node-2", "--drain-timeout=5s", "--log-level=warn"}, args...)...)
	return proc
}

// metric sums the samples of a Prometheus counter whose labels include
// every one of match, from a /metrics page.
func metric(t *testing.T, client *http.Client, url, name string, match ...string) float64 {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(line, m)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		sum += v
	}
	require.NoError(t, sc.Err())
	return sum
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{SchedulerName: "lockstep-scheduler",
			Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}}}}}
}

// A real kube-scheduler with the LockstepExtender plugin binds every pod
// through the sample extender, which it asks over lockstep with mutual
// TLS, and never onto the node the extender keeps in maintenance. Then,
// while pods keep arriving, the extender is upgraded from v1 to v2 in
// fork mode (the new replica starts, the old one drains and stops), and
// no scheduling attempt fails: the scheduler's own counters say every
// attempt scheduled its pod.
func TestSchedulerPluginThroughExtenderUpgrade(t *testing.T) {
	plane := controlplane.Start(t)
	plane.CreateNamespace(t, "shop")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := plane.Client

	for i := 1; i <= 4; i++ {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		require.NoError(t, err)
		got, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		require.NoError(t, err)
		// No kubelet lifts the taint a new node gets until it reports
		// ready: the test does it.
		got.Spec.Taints = nil
		got, err = cs.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err)
		got.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
		got.Status.Allocatable = got.Status.Capacity
		got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "E2E"}}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	tl := newLockstepTLS(t, plane.Dir)
	oldAddr := "127.0.0.1:" + strconv.Itoa(controlplane.FreePort(t))
	newAddr := "127.0.0.1:" + strconv.Itoa(controlplane.FreePort(t))
	v1 := startExtender(t, plane, tl, "extender-v1", oldAddr, "--api=v1")

	sched := plane.StartScheduler(t, "lockstep-kube-scheduler", fmt.Sprintf(`profiles:
- schedulerName: lockstep-scheduler
  plugins:
    preFilter: {enabled: [{name: LockstepExtender}]}
    filter: {enabled: [{name: LockstepExtender}]}
    preScore: {enabled: [{name: LockstepExtender}]}
    score: {enabled: [{name: LockstepExtender, weight: 10}]}
    bind: {enabled: [{name: LockstepExtender}], disabled: [{name: DefaultBinder}]}
  pluginConfig:
  - name: LockstepExtender
    args:
      endpoints: [%q, %q]
      caFile: %q
      certFile: %q
      keyFile: %q
      callTimeout: 2s
      onUnavailable: Retry
`, "https://"+oldAddr, "https://"+newAddr, tl.caFile, tl.schedCert, tl.schedKey))

	var mu sync.Mutex
	var created []string
	create := func(name string) {
		_, err := cs.CoreV1().Pods("shop").Create(ctx, newPod(name), metav1.CreateOptions{})
		require.NoError(t, err)
		mu.Lock()
		created = append(created, name)
		mu.Unlock()
	}
	allBound := func(what string) map[string]int {
		t.Helper()
		perNode := map[string]int{}
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			pods, err := cs.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			perNode = map[string]int{}
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" {
					return false, nil
				}
				perNode[p.Spec.NodeName]++
			}
			mu.Lock()
			defer mu.Unlock()
			return len(pods.Items) == len(created), nil
		}), what)
		return perNode
	}

	const before = 15
	for i := range before {
		create(fmt.Sprintf("before-%02d", i))
	}
	perNode := allBound("every pod is bound through the v1 extender")
	t.Logf("bound before the upgrade: %v", perNode)
	assert.Zero(t, perNode["node-2"], "node-2 is in the extender's maintenance window")
	assert.Equal(t, before, perNode["node-1"]+perNode["node-3"]+perNode["node-4"])

	operator := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tl.operator}}
	defer operator.CloseIdleConnections()
	extBinds := func(addr string) float64 {
		return metric(t, operator, "https://"+addr+"/metrics", "sample_extender_requests_total", `method="Bind"`, `outcome="ok"`)
	}
	assert.Equal(t, float64(before), extBinds(oldAddr), "the extender bound every pod")

	// The upgrade, while pods arrive at 10 a second.
	const during = 50
	arriving := make(chan struct{})
	go func() {
		defer close(arriving)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := range during {
			<-tick.C
			create(fmt.Sprintf("during-%02d", i))
		}
	}()
	time.Sleep(time.Second) // pods arrive while only v1 serves
	v2 := startExtender(t, plane, tl, "extender-v2", newAddr, "--api=v2", "--fork")
	require.NoError(t, controlplane.Healthy(v2, "https://"+newAddr+"/readyz", time.Minute, tl.operator),
		"the v2 extender is ready once the scheduler holds a session with it")
	require.NoError(t, v1.Stop(30*time.Second), "the v1 extender drains and stops")
	<-arriving
	perNode = allBound("every pod is bound through the upgrade")
	t.Logf("bound after the upgrade: %v", perNode)
	assert.Zero(t, perNode["node-2"])

	// The plugin is the profile's only binder, and binds through the
	// extender: every binding the v1 extender did not make, v2 made.
	newBinds := extBinds(newAddr)
	t.Logf("bound by the v2 extender: %v of %d", newBinds, before+during)
	assert.Positive(t, newBinds, "the v2 extender bound pods after the upgrade")
	assert.Positive(t, metric(t, operator, "https://"+newAddr+"/metrics", "sample_extender_requests_total",
		`method="Filter"`, `version="2.0.0"`), "the scheduler speaks 2.0.0 with the v2 extender")

	// The scheduler's own account: every attempt scheduled its pod; none
	// failed (error) or found the pod unschedulable.
	schedMetrics := func(result string) float64 {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: plane.HTTPTLS()}}
		defer c.CloseIdleConnections()
		return metric(t, c, sched.URL+"/metrics", "scheduler_schedule_attempts_total", `result="`+result+`"`, `profile="lockstep-scheduler"`)
	}
	assert.Equal(t, float64(before+during), schedMetrics("scheduled"))
	assert.Zero(t, schedMetrics("error"), "no attempt failed through the upgrade")
	assert.Zero(t, schedMetrics("unschedulable"))
}
