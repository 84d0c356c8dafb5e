package kubelet_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// hollowCluster is a node controller under mutual TLS on 127.0.0.1 and one
// kubelet process's hollow nodes, each with a certificate of its own.
type hollowCluster struct {
	ca     *certs.CA
	nc     *nodecontroller.NodeController
	creds  *framework.Credentials
	url    string
	k      *kubelet.Kubelet
	cancel context.CancelFunc
	done   chan struct{}
}

// startHollow starts them; without mTLS every node shares one plain HTTP
// transport and its heartbeat requests.
func startHollow(t testing.TB, nodes int, mtls bool, grace, ttl, statusEvery time.Duration) *hollowCluster {
	t.Helper()
	ca, err := certs.NewCA("hollow")
	require.NoError(t, err)
	var creds *framework.Credentials
	if mtls {
		creds, _ = frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	}
	nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", NodeGrace: grace, Logger: frameworktest.Quiet(),
		Server: framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: ttl, Heartbeat: ttl / 5,
			DrainTimeout: 300 * time.Millisecond, Logger: frameworktest.Quiet(), MTLS: creds}})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = nc.Server().Serve(l)
	}()
	h := &hollowCluster{ca: ca, nc: nc, creds: creds, url: "http://" + l.Addr().String(), done: make(chan struct{})}
	var nodeTLS func(string) (*tls.Config, error)
	if mtls {
		h.url = "https://" + l.Addr().String()
		nodeTLS = kubelet.NodeCertificates(ca, ca.Pool(), "")
	}
	h.k, err = kubelet.New(kubelet.Config{API: "v2", Nodes: nodes, ChangeEvery: -1, StatusEvery: statusEvery, Logger: frameworktest.Quiet(),
		NodeTLS: nodeTLS,
		Client:  framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{h.url}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	var ctx context.Context
	ctx, h.cancel = context.WithCancel(context.Background())
	go func() { defer close(h.done); h.k.Run(ctx) }()
	t.Cleanup(func() {
		h.cancel()
		<-h.done
		h.k.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = nc.Server().Shutdown(ctx)
		<-served
		nc.Close()
	})
	return h
}

// Two hundred hollow nodes in one process, each under mutual TLS with its
// own certificate (so its own connection and its own heartbeats), register,
// watch only their own pod assignments, report their status periodically,
// and a killed one is noticed by its session lapsing while the others stay
// Ready.
func TestHollowNodesMutualTLS(t *testing.T) {
	nodes := 200
	if raceEnabled {
		nodes = 50
	}
	// A session TTL of 20 s and a grace period of 1 s: a killed node is
	// Unknown some 21 s after its last heartbeat; the TTL outlasts the
	// stalls of a loaded machine (heartbeat p99 above 10 s was seen under
	// the race detector at load 40), which would otherwise lose live nodes.
	h := startHollow(t, nodes, true, time.Second, 20*time.Second, time.Second)
	k, nc := h.k, h.nc

	// The bound only stops a stuck run: two hundred full handshakes and
	// watches under the race detector on a loaded 2-core machine.
	require.Eventually(t, func() bool {
		return k.Ready() == nil && k.Synced() && len(nc.Health()) == nodes
	}, 120*time.Second, 20*time.Millisecond)
	// Every node is Ready once its status is in; a node whose first
	// report is still queued behind a stall is Unknown until it lands.
	require.Eventually(t, func() bool {
		for _, hl := range nc.Health() {
			if hl.State != nhv2.NodeHealthStateReady {
				return false
			}
		}
		return true
	}, 120*time.Second, 20*time.Millisecond, "every node Ready")
	assert.Equal(t, map[string]int{"2.0.0": nodes}, nc.Server().Status().PeersByVersion["nodestatus"], "one session per node")
	// Each node dialled with its own certificate: a full handshake each
	// (a shared transport would have made a handful).
	assert.GreaterOrEqual(t, h.creds.Handshakes().ServerFull, uint64(nodes))

	// Each node heartbeats alone, one request per node per interval
	// (4 s): one request per node comes within a few intervals, where
	// requests shared by all would take one interval per node, 200 s or
	// more.
	beats := k.Stats().Heartbeats.Count()
	require.Eventually(t, func() bool { return k.Stats().Heartbeats.Count()-beats >= int64(nodes) }, 60*time.Second, 20*time.Millisecond)
	p99 := k.Stats().Heartbeats.Quantile(0.99)
	assert.Greater(t, p99, time.Duration(0))
	t.Logf("heartbeat p99 %v over %d requests", p99, k.Stats().Heartbeats.Count())

	// Statuses are reported every second though nothing changes.
	reports := k.Stats().StatusReports.Load()
	require.Eventually(t, func() bool { return k.Stats().StatusReports.Load()-reports >= int64(2*nodes) }, 60*time.Second, 20*time.Millisecond)

	// A pod bound to node-007 runs there and nowhere else: each node's
	// watch selects its own assignments.
	sched := schedulerClient(t, h.ca, h.url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := sched.Bind(ctx, &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: "web", UID: "uid-web"}, NodeName: "node-007"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, p := range nc.Pods() {
			if p.UID == "uid-web" && p.Phase == nsv2.PodStatusPhaseRunning {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond)
	for i := range nodes {
		if i == 7 {
			assert.Equal(t, []string{"uid-web"}, k.Running(i))
		} else {
			assert.Empty(t, k.Running(i), "node %d", i)
		}
	}
	assert.Zero(t, k.Stats().ForeignAssignments.Load())

	// node-042 dies: it sends nothing more, and is noticed only when its
	// session lapses and the grace period ends.
	killed := time.Now()
	k.Stop(42)
	require.Eventually(t, func() bool { _, lost := nc.Lost()["node-042"]; return lost }, 120*time.Second, 10*time.Millisecond)
	noticed := time.Since(killed)
	// Its last heartbeat was at most an interval (4 s) before the kill, so
	// its session lapsed 16 s after it at the earliest, and the grace
	// period adds 1 s; a goodbye would have made it 1 s.
	assert.GreaterOrEqual(t, noticed, 5*time.Second, "noticed when its session lapsed, not at once: it said no goodbye")
	assert.Len(t, nc.Lost(), 1, "only the killed node is lost")
	assert.Equal(t, map[string]int{"2.0.0": nodes - 1}, nc.Server().Status().PeersByVersion["nodestatus"])
	t.Logf("killed node noticed after %v", noticed)
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

// A node's certificate names it, so it may report its own node only.
func TestNodeCertificatesName(t *testing.T) {
	ca, err := certs.NewCA("names")
	require.NoError(t, err)
	issue := kubelet.NodeCertificates(ca, ca.Pool(), "nc")
	tc, err := issue("node-003")
	require.NoError(t, err)
	require.Len(t, tc.Certificates, 1)
	uris := tc.Certificates[0].Leaf.URIs
	require.Len(t, uris, 1)
	assert.Equal(t, "lockstep://kubelet/node-003", uris[0].String())
	assert.Equal(t, "nc", tc.ServerName)
	assert.True(t, slices.Contains(tc.Certificates[0].Leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth), fmt.Sprint("client auth: ", tc.Certificates[0].Leaf.ExtKeyUsage))
}
