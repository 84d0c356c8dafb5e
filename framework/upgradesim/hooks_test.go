package upgradesim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

func TestHooksRunAtTheirStagesAndUserInvariantsHold(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	ran := map[upgradesim.Stage]string{}
	hook := func(stage upgradesim.Stage) upgradesim.Hook {
		return upgradesim.Hook{Name: string(stage) + "-probe", Stage: stage, Run: func(ctx context.Context, c *upgradesim.Cluster) error {
			// A hook may call the system itself: its calls are not traffic,
			// so the ledger ignores them.
			if err := report(ctx, c.Client("kubelet", "nodecontroller")); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			ran[stage] = fmt.Sprintf("step %d: nodecontroller %s, kubelet %s", c.Step(), c.Version("nodecontroller"), c.Version("kubelet"))
			return nil
		}}
	}
	cfg := world{fork: true}.config()
	cfg.Hooks = []upgradesim.Hook{hook(upgradesim.StageStartup), hook(upgradesim.StageMixedVersion), hook(upgradesim.StageAfterUpgrade)}
	cfg.Invariants = []upgradesim.Invariant{
		{Name: "the kubelet is never ahead of the nodecontroller", During: func(c *upgradesim.Cluster) error {
			if c.Version("kubelet") == "v2" && c.Version("nodecontroller") == "v1" {
				return errors.New("kubelet at v2 while the nodecontroller is at v1")
			}
			return nil
		}},
		{Name: "traffic was acknowledged", After: func(ctx context.Context, c *upgradesim.Cluster) error {
			if c.Calls().Acknowledged == 0 {
				return errors.New("no call acknowledged")
			}
			return nil
		}},
	}
	sim := mustSim(t, cfg)
	rep := sim.Run(t, mustPlan(t, "hooks", 1, upgradeServerFirst))
	assert.Equal(t, `plan "hooks", seed 1, 9 steps:
  1. start nodecontroller at v1
  2. start kubelet at v1
  3. wait until connected within 10s
  4. run startup hooks
  5. upgrade nodecontroller to v2
  6. run mixed-version hooks
  7. upgrade kubelet to v2
  8. wait until 10 calls acknowledged within 10s
  9. run after-upgrade hooks
`, rep.Plan.String())
	assert.Equal(t, map[upgradesim.Stage]string{
		upgradesim.StageStartup:      "step 4: nodecontroller v1, kubelet v1",
		upgradesim.StageMixedVersion: "step 6: nodecontroller v2, kubelet v1",
		upgradesim.StageAfterUpgrade: "step 9: nodecontroller v2, kubelet v2",
	}, ran)
}

func TestFailingHooksInvariantsAndConditionsAreReportedWithTheirStep(t *testing.T) {
	t.Parallel()
	cfg := world{}.config()
	cfg.Hooks = []upgradesim.Hook{{Name: "break-things", Stage: upgradesim.StageMixedVersion,
		Run: func(context.Context, *upgradesim.Cluster) error { return errors.New("the migration failed") }}}
	cfg.Invariants = []upgradesim.Invariant{
		{Name: "no v2 kubelet", During: func(c *upgradesim.Cluster) error {
			if c.Version("kubelet") == "v2" {
				return errors.New("the kubelet runs v2")
			}
			return nil
		}},
		{Name: "never settles", After: func(context.Context, *upgradesim.Cluster) error { return errors.New("still unsettled") }},
	}
	cfg.Conditions = []upgradesim.Condition{{Name: "never", Holds: func(*upgradesim.Cluster) error { return errors.New("not yet") }}}
	cfg.SettleBound = 200 * time.Millisecond
	sim := mustSim(t, cfg)
	rep, err := sim.Execute(context.Background(), mustPlan(t, "failing", 3, upgradeClientFirst+"wait until never within 100ms\n"))
	require.NoError(t, err)
	byName := map[string]upgradesim.Violation{}
	for _, v := range rep.Violations {
		if _, seen := byName[v.Invariant]; !seen {
			byName[v.Invariant] = v
		}
	}
	require.Contains(t, byName, "hook break-things")
	assert.Equal(t, 5, byName["hook break-things"].Step)
	assert.Equal(t, "run mixed-version hooks", byName["hook break-things"].StepText)
	assert.Contains(t, byName["hook break-things"].Error(), "mixed-version hook break-things failed: the migration failed")

	require.Contains(t, byName, "no v2 kubelet")
	assert.GreaterOrEqual(t, byName["no v2 kubelet"].Step, 4)
	assert.Contains(t, byName["no v2 kubelet"].Error(), `plan "failing" seed 3`)

	require.Contains(t, byName, "never settles")
	assert.Equal(t, len(rep.Plan.Steps)+1, byName["never settles"].Step)
	assert.Contains(t, byName["never settles"].Error(), "(after the last step)")

	require.Contains(t, byName, upgradesim.InvariantSteps)
	assert.Equal(t, len(rep.Plan.Steps), byName[upgradesim.InvariantSteps].Step)
	assert.Contains(t, byName[upgradesim.InvariantSteps].Message, "never did not hold within 100ms: not yet")
	assert.True(t, strings.HasPrefix(rep.Summary(), "verdict: violated "), rep.Summary())
}
