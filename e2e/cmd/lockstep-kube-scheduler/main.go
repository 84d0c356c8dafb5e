// Command lockstep-kube-scheduler is kube-scheduler with one more plugin,
// the sample's LockstepExtender (sample/kubernetes/schedulerplugin): the
// sample extender asked over lockstep from a real scheduler. It takes
// every flag kube-scheduler takes; a KubeSchedulerConfiguration profile
// enables the plugin:
//
//	profiles:
//	- schedulerName: lockstep-scheduler
//	  plugins:
//	    multiPoint: {enabled: [{name: LockstepExtender}]}
//	    bind: {disabled: [{name: DefaultBinder}]}
//	  pluginConfig:
//	  - name: LockstepExtender
//	    args: {endpoints: ["https://127.0.0.1:8443"], caFile: ..., certFile: ..., keyFile: ...}
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // as kube-scheduler's main: --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/lockstep-dev/lockstep/sample/kubernetes/schedulerplugin"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(schedulerplugin.Name, schedulerplugin.New))
	os.Exit(cli.Run(cmd))
}
