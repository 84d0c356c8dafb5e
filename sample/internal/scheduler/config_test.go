package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// Scheduler configurations that public extenders publish for
// kube-scheduler, as they publish them (Apache-2.0), but for the
// apiVersion where theirs names another.
const (
	// topolvm/topolvm deploy/scheduler-config/scheduler-config.yaml at
	// 83e3dcee2fd750e3c3f40f74faa90ced8e9676c7.
	topolvmConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
extenders:
- urlPrefix: "http://127.0.0.1:9251"
  filterVerb: "predicate"
  prioritizeVerb: "prioritize"
  nodeCacheCapable: false
  weight: 1
  managedResources:
  - name: "topolvm.io/capacity"
    ignoredByScheduler: true
`
	// AliyunContainerService/gpushare-scheduler-extender
	// config/scheduler-policy-config.yaml at
	// c0b61411cddabd1b19500878ab355afeeae5589e (kubescheduler.config.k8s.io/v1beta2 there).
	gpushareConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
extenders:
- urlPrefix: "http://127.0.0.1:32766/gpushare-scheduler"
  filterVerb: filter
  bindVerb: bind
  enableHTTPS: false
  nodeCacheCapable: true
  managedResources:
  - name: aliyun.com/gpu-mem
    ignoredByScheduler: false
  ignorable: false
`
	// intel/platform-aware-scheduling telemetry-aware-scheduling/deploy/
	// extender-configuration/scheduler-config.yaml at
	// c4c90e36d256c41e4ab007a171ab4bd2d058f587 (apiVersion XVERSIONX there,
	// which its script fills in).
	tasConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
extenders:
  - urlPrefix: "https://tas-service.telemetry-aware-scheduling.svc.cluster.local:9001"
    prioritizeVerb: "scheduler/prioritize"
    filterVerb: "scheduler/filter"
    weight: 1
    enableHTTPS: true
    managedResources:
      - name: "telemetry/scheduling"
        ignoredByScheduler: true
    ignorable: true
    tlsConfig:
      insecure: false
      certFile: "/host/certs/client.crt"
      keyFile: "/host/certs/client.key"
`
)

// TestParseConfigTakesPublishedExtenderConfigurations reads the
// configurations three public extenders publish, as kube-scheduler
// does.
func TestParseConfigTakesPublishedExtenderConfigurations(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		urlPrefix    string
		managed      string
		paths        map[string]string
	}{
		{"topolvm", topolvmConfig, "http://127.0.0.1:9251", "topolvm.io/capacity", map[string]string{"Filter": "predicate", "Prioritize": "prioritize"}},
		{"gpushare", gpushareConfig, "http://127.0.0.1:32766/gpushare-scheduler", "aliyun.com/gpu-mem", map[string]string{"Filter": "filter", "Bind": "bind"}},
		{"TAS", tasConfig, "https://tas-service.telemetry-aware-scheduling.svc.cluster.local:9001", "telemetry/scheduling",
			map[string]string{"Filter": "scheduler/filter", "Prioritize": "scheduler/prioritize"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, warnings, err := scheduler.ParseConfig([]byte(tc.config))
			require.NoError(t, err)
			assert.NotEmpty(t, warnings, "clientConnection and the like are named as not implemented")
			if tc.name == "TAS" {
				cfg.Extenders[0].TLSConfig = nil // its files are a cluster's
			}
			ecs, err := scheduler.ExtendersFromConfig(cfg, framework.ClientConfig{Component: "scheduler", Logger: frameworktest.Quiet()})
			require.NoError(t, err)
			require.Len(t, ecs, 1)
			assert.Equal(t, tc.urlPrefix, ecs[0].PinnedURL)
			assert.Equal(t, tc.paths, ecs[0].Paths)
			assert.Equal(t, []string{tc.managed}, ecs[0].ManagedResources)
		})
	}
}

// TestParseConfigRefusesWhatKubeSchedulerRefuses: the extenders list is
// validated as kube-scheduler's validateExtenders validates it, with the
// cases of its own tests.
func TestParseConfigRefusesWhatKubeSchedulerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		extenders string
		want      string // in the error
	}{
		{"a managed resource named by two extenders", `
- {urlPrefix: "http://127.0.0.1:8081/extender", managedResources: [{name: foo.com/bar}]}
- {urlPrefix: "http://127.0.0.1:8082/extender", bindVerb: bind, managedResources: [{name: foo.com/bar}]}
`, `extenders[1].managedResources[0].name "foo.com/bar": duplicate extender managed resource name`},
		{"a managed resource in kubernetes.io", `
- {urlPrefix: "http://127.0.0.1:8081/extender", managedResources: [{name: kubernetes.io/foo}]}
`, `"kubernetes.io/foo": is an invalid extended resource name`},
		{"a native resource", `
- {urlPrefix: "http://127.0.0.1:8081/extender", managedResources: [{name: cpu}]}
`, `"cpu": is an invalid extended resource name`},
		{"two binders", `
- {urlPrefix: "http://127.0.0.1:8081/extender", bindVerb: bind}
- {urlPrefix: "http://127.0.0.1:8082/extender", bindVerb: bind}
`, "found 2 extenders implementing bind"},
		{"a prioritizer without weight", `
- {urlPrefix: "http://127.0.0.1:8081/extender", prioritizeVerb: prioritize}
`, "must have a positive weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:" + tc.extenders
			_, _, err := scheduler.ParseConfig([]byte(doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
