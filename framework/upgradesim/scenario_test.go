package upgradesim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// TestScenarios runs the upgrade stories in testdata/scenarios, raft's
// interaction-test style: each file declares a world and runs plans, and
// the expected output is the plan as it ran and its outcome (verdict,
// final versions, agreed sessions). go test -run TestScenarios -rewrite
// rewrites the expected output. Timelines go to the test log.
//
// Commands:
//
//	world [fork] [external] [nodecontrollers=N] [kubelets=N] [broken=KIND] [bound=D] [timeout=D]
//	run [name=NAME] [seed=N]   (input: one step per line)
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		t.Parallel()
		var sim *upgradesim.Sim
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "world":
				w := world{fork: d.HasArg("fork"), external: d.HasArg("external")}
				d.MaybeScanArgs(t, "nodecontrollers", &w.nodecontrollers)
				d.MaybeScanArgs(t, "kubelets", &w.kubelets)
				d.MaybeScanArgs(t, "broken", &w.brokenV2)
				var bound, timeout string
				if d.MaybeScanArgs(t, "bound", &bound) {
					w.bound = mustDuration(t, bound)
				}
				if d.MaybeScanArgs(t, "timeout", &timeout) {
					w.timeout = mustDuration(t, timeout)
				}
				var err error
				if sim, err = upgradesim.New(w.config()); err != nil {
					return err.Error()
				}
				return "ok"
			case "run":
				name := strings.TrimSuffix(path[strings.LastIndex(path, "/")+1:], ".txt")
				var seed int64
				d.MaybeScanArgs(t, "name", &name)
				d.MaybeScanArgs(t, "seed", &seed)
				plan, err := upgradesim.ParsePlan(name, seed, d.Input)
				if err != nil {
					return err.Error()
				}
				prepared, err := sim.Prepare(plan)
				if err != nil {
					return err.Error()
				}
				rep, err := sim.Execute(context.Background(), plan)
				if err != nil {
					return err.Error()
				}
				t.Logf("%s", rep.Timeline.Text())
				for _, v := range rep.Violations {
					t.Logf("%v", v)
				}
				return prepared.String() + rep.Summary()
			default:
				t.Fatalf("unknown command %q", d.Cmd)
				return ""
			}
		})
	})
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
