// Package controllerruntime runs a controller-runtime manager against a
// real apiserver, reconciling real Nodes from a lockstep topic
// (examples/nodehealthlabels).
package controllerruntime

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lockstep-dev/lockstep/e2e/controlplane"
	"github.com/lockstep-dev/lockstep/examples/nodehealthlabels"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

func TestMain(m *testing.M) {
	v, err := controlplane.Version("kube-apiserver")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("kube-apiserver --version:", v)
	os.Exit(m.Run())
}

// A manager, as an identity that may only read and patch Nodes, labels
// every real Node with its health as a lockstep server's topic says it,
// follows the topic's changes, puts back a label someone else changed,
// and stops cleanly.
func TestManagerReconcilesNodesFromATopic(t *testing.T) {
	plane := controlplane.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs := plane.Client

	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nodehealth-labeler"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nodehealth-labeler"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nodehealth-labeler"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "nodehealth-labeler"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	tl := frameworktest.NewTLS(t, "labeler")
	var health *framework.TopicWriter[nodehealthlabels.NodeHealth]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "healthservice", Release: "1.0.0", TLSConfig: tl.Server},
		func(s *framework.Server) {
			health = framework.ServeTopic[nodehealthlabels.NodeHealth](s, nodehealthlabels.Contract, nodehealthlabels.Topic)
		})
	require.NoError(t, health.Set(&nodehealthlabels.NodeHealth{Node: "node-1", Ready: true}))
	require.NoError(t, health.Set(&nodehealthlabels.NodeHealth{Node: "node-2", Ready: false, Reason: "disk pressure"}))

	cfg, err := plane.Config("nodehealth-labeler")
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	require.NoError(t, err)
	lc, err := framework.NewClient(nodehealthlabels.Contract, framework.ClientConfig{Component: "labeler", Release: "1.0.0",
		Endpoints: []string{srv.URL}, TLSConfig: tl.Client, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	require.NoError(t, nodehealthlabels.Setup(mgr, lc))
	mgrCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(mgrCtx) }()

	labels := func(want map[string]string, what string) {
		t.Helper()
		got := map[string]string{}
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			got = map[string]string{}
			for _, n := range nodes.Items {
				got[n.Name] = n.Labels[nodehealthlabels.Label]
			}
			return assert.ObjectsAreEqual(want, got), nil
		})
		require.NoError(t, err, "%s: labels %v, want %v", what, got, want)
	}
	labels(map[string]string{"node-1": "ready", "node-2": "not-ready", "node-3": "unknown"}, "the first sync")

	start := time.Now()
	require.NoError(t, health.Set(&nodehealthlabels.NodeHealth{Node: "node-3", Ready: true}))
	require.NoError(t, health.Delete("node-1"))
	labels(map[string]string{"node-1": "unknown", "node-2": "not-ready", "node-3": "ready"}, "the topic's changes")
	t.Logf("topic change -> Node label seen through the apiserver: %v", time.Since(start).Round(time.Millisecond))

	n2, err := cs.CoreV1().Nodes().Get(ctx, "node-2", metav1.GetOptions{})
	require.NoError(t, err)
	n2.Labels[nodehealthlabels.Label] = "ready"
	_, err = cs.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{})
	require.NoError(t, err)
	labels(map[string]string{"node-1": "unknown", "node-2": "not-ready", "node-3": "ready"}, "a label changed by someone else is put back")

	stop()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not stop")
	}
	assert.Empty(t, srv.Server.Sessions(), "the manager closed the lockstep client's session")
}
