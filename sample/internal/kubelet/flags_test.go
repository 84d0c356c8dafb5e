package kubelet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
)

func TestNodeLabelsAsTheKubeletReadsThem(t *testing.T) {
	got, err := kubelet.ParseNodeLabels("topology.kubernetes.io/zone=a, disktype=ssd,empty=")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"topology.kubernetes.io/zone": "a", "disktype": "ssd", "empty": ""}, got)
	for _, bad := range []string{"zone", "-zone=a", "zone=a b", "a/b/c=x", "zone=" + string(make([]byte, 64))} {
		_, err := kubelet.ParseNodeLabels(bad)
		assert.Error(t, err, bad)
	}
}

func TestRegisterWithTaintsAsTheKubeletReadsThem(t *testing.T) {
	got, err := kubelet.ParseTaints("dedicated=gpu:NoSchedule,example.com/spot:PreferNoSchedule,maint=now:NoExecute")
	require.NoError(t, err)
	assert.Equal(t, []corev1.Taint{
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/spot", Effect: corev1.TaintEffectPreferNoSchedule},
		{Key: "maint", Value: "now", Effect: corev1.TaintEffectNoExecute},
	}, got)
	for _, bad := range []string{"dedicated=gpu", "dedicated=gpu:Sometimes", "=gpu:NoSchedule", "a=b c:NoSchedule",
		"dedicated=gpu:NoSchedule,dedicated=cpu:NoSchedule"} {
		_, err := kubelet.ParseTaints(bad)
		assert.Error(t, err, bad)
	}
}
