package controlplane_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-dev/lockstep/e2e/controlplane"
)

func TestMain(m *testing.M) {
	// The log names the binaries under test.
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
		v, err := controlplane.Version(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s --version: %s\n", bin, v)
	}
	os.Exit(m.Run())
}

// A real etcd and kube-apiserver start on 127.0.0.1, store a Node and
// read it back; kube-controller-manager's serviceaccount controller and
// kube-scheduler, as their bootstrap identities, do their jobs against
// them: a new namespace gets its default ServiceAccount, and a pod is
// bound to the one schedulable node.
func TestControlPlane(t *testing.T) {
	plane := controlplane.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"lockstep.dev/e2e": "true"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	node.Status.Allocatable = node.Status.Capacity
	created, err := plane.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = plane.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	got, err := plane.Client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", got.Labels["lockstep.dev/e2e"])
	assert.Equal(t, "4", got.Status.Allocatable.Cpu().String(), "the status written is the status read")

	plane.StartControllerManager(t, "serviceaccount,serviceaccount-token")
	_, err = plane.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := plane.Client.CoreV1().ServiceAccounts("apps").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}), "kube-controller-manager creates the namespace's default ServiceAccount")

	plane.StartScheduler(t, "kube-scheduler", "")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
			// The node has no kubelet: nothing lifts the taint the
			// apiserver gives a new node until its kubelet reports ready.
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}}}
	_, err = plane.Client.CoreV1().Pods("apps").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	var bound string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := plane.Client.CoreV1().Pods("apps").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		bound = p.Spec.NodeName
		return bound != "", nil
	}), "kube-scheduler binds the pod")
	assert.Equal(t, "node-a", bound)
}
