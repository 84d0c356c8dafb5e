package nodeobjects_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller/nodeobjects"
)

// Hollow nodes under mutual TLS report to a node controller that persists
// their Node objects: each is created Ready once, and a killed node's
// object turns Unknown once its session lapsed and its grace period ended,
// while the others are not written again.
func TestKilledHollowNodeTurnsUnknown(t *testing.T) {
	const nodes = 20
	nodeClient := nodeClient(t)
	w, err := nodeobjects.New(nodeobjects.Config{Nodes: nodeClient, RefreshEvery: time.Hour, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	ca, err := certs.NewCA("objects")
	require.NoError(t, err)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", NodeGrace: time.Second, OnHealth: w.Observe, Logger: frameworktest.Quiet(),
		Server: framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: 5 * time.Second, Heartbeat: time.Second,
			DrainTimeout: 300 * time.Millisecond, Logger: frameworktest.Quiet(), MTLS: creds}})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan struct{})
	go func() { defer close(served); _ = nc.Server().Serve(l) }()
	k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: nodes, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		NodeTLS: kubelet.NodeCertificates(ca, ca.Pool(), ""),
		Client:  framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{"https://" + l.Addr().String()}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran, wrote := make(chan struct{}), make(chan struct{})
	go func() { defer close(ran); k.Run(ctx) }()
	go func() { defer close(wrote); w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-ran
		<-wrote
		k.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = nc.Server().Shutdown(sctx)
		<-served
		nc.Close()
	})

	st := w.Stats()
	require.Eventually(t, func() bool { return st.Creates.Load() == nodes && w.Pending() == 0 }, 60*time.Second, 10*time.Millisecond)
	list, err := nodeClient.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, nodes)
	for _, n := range list.Items {
		assert.Equal(t, corev1.ConditionTrue, readyOf(n), n.Name)
	}

	killed := time.Now()
	k.Stop(5)
	require.Eventually(t, func() bool { return st.Transitions.Load() == 1 && w.Pending() == 0 }, 60*time.Second, 10*time.Millisecond)
	t.Logf("node-005's object turned Unknown %v after it was killed", time.Since(killed))
	for i := range nodes {
		n, err := nodeClient.Get(context.Background(), fmt.Sprintf("node-%03d", i), metav1.GetOptions{})
		require.NoError(t, err)
		want := corev1.ConditionTrue
		if i == 5 {
			want = corev1.ConditionUnknown
		}
		assert.Equal(t, want, readyOf(*n), n.Name)
	}
	assert.Zero(t, st.Refreshes.Load())
	assert.Zero(t, st.Failures.Load())
}

func readyOf(n corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
