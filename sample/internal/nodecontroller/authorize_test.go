package nodecontroller_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// startMTLS serves a node controller under mutual TLS on 127.0.0.1, with
// certificates from ca.
func startMTLS(t *testing.T, ca *certs.CA, cfg nodecontroller.Config) (*nodecontroller.NodeController, string) {
	t.Helper()
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	cfg.Server = framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: 2 * time.Second,
		Heartbeat: 200 * time.Millisecond, DrainTimeout: 300 * time.Millisecond, Logger: frameworktest.Quiet(), MTLS: creds}
	cfg.Logger = frameworktest.Quiet()
	n, err := nodecontroller.New(cfg)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Server().Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Server().Shutdown(ctx)
		<-done
		n.Close()
	})
	return n, "https://" + l.Addr().String()
}

// kubeletClient is a nodestatus client presenting the certificate of
// lockstep://kubelet/<name>, with a session of its own.
func kubeletClient(t *testing.T, ca *certs.CA, url, name string) nsv2.Client {
	t.Helper()
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "kubelet", Name: name})
	tr := creds.Transport("")
	t.Cleanup(tr.CloseIdleConnections)
	c := frameworktest.NewClient(t, nsv2.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{url}, Transport: tr, Instance: name + "-instance"})
	return nsv2.NewClient(c)
}

// schedulerClient is a nodehealth client presenting the certificate of
// lockstep://scheduler/scheduler-0.
func schedulerClient(t *testing.T, ca *certs.CA, url string) nhv2.Client {
	t.Helper()
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "scheduler", Name: "scheduler-0"})
	tr := creds.Transport("")
	t.Cleanup(tr.CloseIdleConnections)
	return nhv2.NewClient(frameworktest.NewClient(t, nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0",
		Endpoints: []string{url}, Transport: tr}))
}

// bind binds the pods to their nodes and returns each binding's error.
func bind(ctx context.Context, c nhv2.Client, pods []*nsv2.PodStatus) []error {
	errs := make([]error, len(pods))
	for i, p := range pods {
		_, errs[i] = c.Bind(ctx, &nhv2.Binding{Pod: nhv2.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}, NodeName: p.NodeName})
	}
	return errs
}

func nodeStatus(name string) *nsv2.NodeStatus {
	reason := "KubeletReady"
	return &nsv2.NodeStatus{NodeName: name,
		Conditions:  nsv2.Conditions{Ready: nsv2.Condition{Status: nsv2.ConditionStatusTrue, Reason: &reason}},
		Capacity:    nsv2.Resources{CPUMillis: 4000, MemoryBytes: 16 << 30, Pods: 110},
		Allocatable: nsv2.Resources{CPUMillis: 3800, MemoryBytes: 15 << 30, Pods: 110}}
}

func pods(node string, n int) []*nsv2.PodStatus {
	out := make([]*nsv2.PodStatus, n)
	for i := range out {
		out[i] = &nsv2.PodStatus{NodeName: node, Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("%s-%d", node, i),
			Phase: nsv2.PodStatusPhaseRunning}
	}
	return out
}

// A kubelet may report only its own node (the Node-authorizer idea): the
// node is bound to the session that reported it first until that session
// is lost; another kubelet's report of it is permission_denied, status and
// pods alike, and one session reports one node. A kubelet reports only
// pods bound to its node, as the Node authorizer allows a kubelet to
// update the status of its own pods only.
func TestKubeletCannotReportAnotherKubeletsNode(t *testing.T) {
	ca := frameworktest.NewCA(t)
	n, url := startMTLS(t, ca, nodecontroller.Config{API: "v2"})
	a := kubeletClient(t, ca, url, "node-a")
	b := kubeletClient(t, ca, url, "node-b")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, err := a.ReportStatus(ctx, nodeStatus("node-a"))
	require.NoError(t, err)
	_, err = b.ReportStatus(ctx, nodeStatus("node-b"))
	require.NoError(t, err)

	notReady := nodeStatus("node-a")
	notReady.Conditions.Ready.Status = nsv2.ConditionStatusFalse
	_, err = b.ReportStatus(ctx, notReady)
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "b reports a's node NotReady: %v", err)
	results, err := b.ReportPodStatuses(ctx, pods("node-a", 2))
	require.NoError(t, err)
	for _, r := range results {
		assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(r.Err), "b reports a pod of a's node")
	}
	_, err = b.ReportStatus(ctx, nodeStatus("node-c"))
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "a second node from b's session: %v", err)

	onA := pods("node-a", 2)
	results, err = a.ReportPodStatuses(ctx, onA)
	require.NoError(t, err)
	for _, r := range results {
		assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(r.Err), "a reports pods not bound to its node: %v", r.Err)
	}
	for _, err := range bind(ctx, schedulerClient(t, ca, url), onA[:1]) {
		require.NoError(t, err)
	}
	results, err = a.ReportPodStatuses(ctx, onA)
	require.NoError(t, err)
	assert.NoError(t, results[0].Err, "the pod bound to a's node")
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(results[1].Err), "the pod bound nowhere")
	stolen := *onA[0]
	stolen.NodeName = "node-b"
	results, err = b.ReportPodStatuses(ctx, []*nsv2.PodStatus{&stolen})
	require.NoError(t, err)
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(results[0].Err), "b claims a's pod as its own node's")
	require.Len(t, n.Pods(), 1)
	assert.Equal(t, "Running", string(n.Pods()[0].Phase), "a's report of its pod was stored")

	for _, h := range n.Health() {
		if h.NodeName == "node-a" {
			assert.Equal(t, "Ready", string(h.State), "a's node is as a reported it")
			assert.Equal(t, int64(109), h.Allocatable.Pods, "the one pod bound to it")
		}
	}
}

// What a session stores is bounded: a batch over the framework's item
// bound is refused whole, bindings beyond PodsPerNode are refused (so are
// the statuses of the pods they would have bound), and an oversized
// status is refused.
func TestSessionStorageIsBounded(t *testing.T) {
	ca := frameworktest.NewCA(t)
	n, url := startMTLS(t, ca, nodecontroller.Config{API: "v2", PodsPerNode: 50})
	a := kubeletClient(t, ca, url, "node-a")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := a.ReportStatus(ctx, nodeStatus("node-a"))
	require.NoError(t, err)

	// One item over the framework's default bound of 1,000: a batch of
	// 40,000 took seconds to build, encode and refuse under the race
	// detector on a loaded machine, most of the 20 s this test has.
	_, err = a.ReportPodStatuses(ctx, pods("node-a", 1001))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "1,001 items: %v", err)
	assert.ErrorContains(t, err, "at most 1000 items", "refused for its items")

	sixty := pods("node-a", 60)
	refused := 0
	for i, err := range bind(ctx, schedulerClient(t, ca, url), sixty) {
		if i < 50 {
			assert.NoError(t, err)
		} else if framework.CodeOf(err) == framework.CodeResourceExhausted {
			refused++
		}
	}
	assert.Equal(t, 10, refused)
	results, err := a.ReportPodStatuses(ctx, sixty)
	require.NoError(t, err)
	refused = 0
	for i, r := range results {
		if i < 50 {
			assert.NoError(t, r.Err)
		} else if framework.CodeOf(r.Err) == framework.CodePermissionDenied {
			refused++
		}
	}
	assert.Equal(t, 10, refused, "pods never bound")
	assert.Equal(t, int64(60), n.Health()[0].Allocatable.Pods, "110 less the 50 pods kept")

	big := nodeStatus("node-a")
	msg := strings.Repeat("x", 64<<10)
	big.Conditions.Ready.Message = &msg
	_, err = a.ReportStatus(ctx, big)
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "a 64 KiB condition message: %v", err)
}

// Node squatting: under mutual TLS a node belongs to the kubelet whose
// certificate names it, not to the first session that reports it. Another
// kubelet's certificate cannot report a node nobody reports yet, nor one
// whose kubelet has just gone, nor mark it NotReady; the node's own
// kubelet reports it at once after a restart, even while its old session
// still lives; and a certificate without a name reports no node.
func TestANodeBelongsToTheCertificateThatNamesIt(t *testing.T) {
	ca := frameworktest.NewCA(t)
	n, url := startMTLS(t, ca, nodecontroller.Config{API: "v2"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evil := kubeletClient(t, ca, url, "node-evil")

	notReady := nodeStatus("node-x")
	notReady.Conditions.Ready.Status = nsv2.ConditionStatusFalse
	_, err := evil.ReportStatus(ctx, notReady)
	require.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "a node nobody reports yet: %v", err)
	assert.ErrorContains(t, err, "node node-x belongs to lockstep://kubelet/node-x, not to lockstep://kubelet/node-evil")
	assert.Empty(t, n.Health(), "nothing stored for the squatter")

	first := kubeletClient(t, ca, url, "node-x")
	_, err = first.ReportStatus(ctx, nodeStatus("node-x"))
	require.NoError(t, err)
	// The kubelet restarts: a new instance, the same certificate, while
	// the old session has not lapsed yet. It reports at once.
	restarted := kubeletClientInstance(t, ca, url, "node-x", "node-x-restarted")
	_, err = restarted.ReportStatus(ctx, nodeStatus("node-x"))
	require.NoError(t, err, "the restarted kubelet reports its node")
	_, err = evil.ReportStatus(ctx, notReady)
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "the squatter while the kubelet is back: %v", err)
	require.Len(t, n.Health(), 1)
	assert.Equal(t, "Ready", string(n.Health()[0].State), "the node is as its own kubelet reported it")

	anon := kubeletClient(t, ca, url, "")
	_, err = anon.ReportStatus(ctx, nodeStatus("node-y"))
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "a certificate without a name: %v", err)
	assert.ErrorContains(t, err, "names no node")
}

// A node simulator's identity reports the nodes of the prefix granted to
// it (Config.NodeSets) and no other; no other identity reports them, even
// one named like one of them.
func TestNodeSetsGrantANodeSimulatorItsPrefix(t *testing.T) {
	ca := frameworktest.NewCA(t)
	n, url := startMTLS(t, ca, nodecontroller.Config{API: "v2", NodeSets: map[string]string{"sim-a": "sim-a-", "sim": "sim-"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		c := kubeletClientInstance(t, ca, url, "sim-a", fmt.Sprintf("sim-a-%d", i))
		_, err := c.ReportStatus(ctx, nodeStatus(fmt.Sprintf("sim-a-%03d", i)))
		require.NoError(t, err, "node %d of the simulator", i)
	}
	outside := kubeletClientInstance(t, ca, url, "sim-a", "sim-a-outside")
	_, err := outside.ReportStatus(ctx, nodeStatus("node-1"))
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "a node outside the simulator's prefix: %v", err)
	_, err = outside.ReportStatus(ctx, nodeStatus("sim-b-000"))
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "the shorter prefix is another identity's: %v", err)
	named := kubeletClient(t, ca, url, "sim-a-003")
	_, err = named.ReportStatus(ctx, nodeStatus("sim-a-003"))
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err), "a certificate named like a granted node: %v", err)
	assert.ErrorContains(t, err, "granted to lockstep://kubelet/sim-a")
	assert.Len(t, n.Health(), 3)
}

// kubeletClientInstance is kubeletClient with an instance name of its own:
// another process presenting the same certificate.
func kubeletClientInstance(t *testing.T, ca *certs.CA, url, name, instance string) nsv2.Client {
	t.Helper()
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "kubelet", Name: name})
	tr := creds.Transport("")
	t.Cleanup(tr.CloseIdleConnections)
	c := frameworktest.NewClient(t, nsv2.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{url}, Transport: tr, Instance: instance})
	return nsv2.NewClient(c)
}

// A kubelet's report publishes its node's health on the kubelet's behalf:
// the key counts against that identity's share of the NodeHealth topic,
// and a publish the topic refuses is the call's error, not an Ack with the
// node missing from the topic. Another identity keeps its own share.
func TestAReportBeyondTheKubeletsTopicShareIsRefused(t *testing.T) {
	ca := frameworktest.NewCA(t)
	n, url := startMTLS(t, ca, nodecontroller.Config{API: "v2", NodesPerSession: 4,
		NodeSets:    map[string]string{"sim-a": "sim-a-"},
		HealthTopic: []framework.TopicOption{framework.WithMaxKeysPerWriter(1)}})
	sim := kubeletClient(t, ca, url, "sim-a")
	b := kubeletClient(t, ca, url, "node-b")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, err := sim.ReportStatus(ctx, nodeStatus("sim-a-0"))
	require.NoError(t, err)
	_, err = sim.ReportStatus(ctx, nodeStatus("sim-a-1"))
	assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err), "a second node beyond sim-a's share of one key: %v", err)
	assert.ErrorContains(t, err, "topic_keys_per_writer")
	_, err = b.ReportStatus(ctx, nodeStatus("node-b"))
	require.NoError(t, err, "node-b's identity has a share of its own")

	var published []string
	for _, h := range n.Health() {
		published = append(published, h.NodeName)
	}
	assert.Equal(t, []string{"node-b", "sim-a-0"}, published, "the refused node's health is not published")
}
