package upgradesim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

func mustSim(t testing.TB, cfg upgradesim.Config) *upgradesim.Sim {
	t.Helper()
	sim, err := upgradesim.New(cfg)
	require.NoError(t, err)
	return sim
}

// TestRandomPlanGolden pins the generator: testdata/random_plans.txt holds
// the plans of a few seeds (rewrite with -rewrite). The same seed prints
// the same plan, run after run.
//
//	random seed=N   (prints the plan of randomWorld(N))
func TestRandomPlanGolden(t *testing.T) {
	datadriven.RunTest(t, "testdata/random_plans.txt", func(t *testing.T, d *datadriven.TestData) string {
		var seed int64
		d.ScanArgs(t, "seed", &seed)
		sim := mustSim(t, randomWorld(seed, true).config())
		return fmt.Sprintf("world: %s\n%s", randomWorld(seed, true), sim.RandomPlan(seed, upgradesim.DefaultMutations()))
	})
}

func TestRandomPlansArePureFunctionsOfTheirSeedAndRunnable(t *testing.T) {
	distinct := map[string]bool{}
	for seed := int64(0); seed < 200; seed++ {
		sim := mustSim(t, randomWorld(seed, true).config())
		p := sim.RandomPlan(seed, upgradesim.DefaultMutations())
		again := mustSim(t, randomWorld(seed, true).config()).RandomPlan(seed, upgradesim.DefaultMutations())
		require.Equal(t, p.String(), again.String(), "seed %d", seed)
		distinct[p.String()] = true

		// The printed plan parses back to the same plan, and every step is
		// possible where it stands.
		parsed, err := upgradesim.ParsePlan(p.Name, p.Seed, p.String())
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, p.String(), parsed.String(), "seed %d", seed)
		_, err = sim.Prepare(p)
		require.NoError(t, err, "seed %d", seed)
	}
	assert.Len(t, distinct, 200, "every seed has its own plan")
}

func TestRandomPlanMutationsCanBeTurnedOff(t *testing.T) {
	sim := mustSim(t, world{nodecontrollers: 2}.config())
	p := sim.RandomPlan(3, upgradesim.Mutations{})
	assert.Equal(t, `plan "random", seed 3, 9 steps:
  1. start nodecontroller#1 at v1
  2. start kubelet at v1
  3. start nodecontroller#0 at v1
  4. wait until connected within 10s
  5. upgrade nodecontroller#1 to v2
  6. upgrade kubelet to v2
  7. upgrade nodecontroller#0 to v2
  8. wait until connected within 10s
  9. wait until 5 calls acknowledged within 10s
`, p.String())
}

func TestStepsPrintAndParseBack(t *testing.T) {
	for _, st := range []upgradesim.Step{
		upgradesim.Start("nodecontroller#1", "v1"),
		upgradesim.Stop("kubelet"),
		upgradesim.Kill("kubelet"),
		upgradesim.Upgrade("kubelet", "v2"),
		upgradesim.Upgrade("kubelet", "v2").WithoutDrain(),
		upgradesim.Rollback("nodecontroller#0", "v1"),
		upgradesim.Rollback("nodecontroller#0", "v1").WithoutDrain(),
		upgradesim.Restart("kubelet"),
		upgradesim.Restart("kubelet").WithoutDrain(),
		upgradesim.Partition("kubelet", "nodecontroller#2"),
		upgradesim.Slow("kubelet", "nodecontroller", 40*time.Millisecond),
		upgradesim.Drop("kubelet", "nodecontroller", 1),
		upgradesim.Drop("kubelet", "nodecontroller", 3),
		upgradesim.Heal("kubelet", "nodecontroller"),
		upgradesim.Wait(1500 * time.Millisecond),
		upgradesim.WaitUntil(upgradesim.Connected, 10*time.Second),
		upgradesim.WaitUntil(upgradesim.CallsAcknowledged(20), 5*time.Second),
		upgradesim.RunHooks(upgradesim.StageMixedVersion),
	} {
		parsed, err := upgradesim.ParseStep(st.String())
		require.NoError(t, err, st.String())
		assert.Equal(t, st.String(), parsed.String())
		assert.Equal(t, st.Op, parsed.Op)
	}
}

func TestParseStepExplainsMistakes(t *testing.T) {
	for _, tc := range []struct {
		line string // what was written
		err  string // part of the error
	}{
		{"upgrade kubelet", "not a step"},
		{"wait soon", `"soon" is not a positive duration`},
		{"wait -1s", "not a positive duration"},
		{"slow a and b by fast", `"fast" is not a positive duration`},
		{"drop the next 0 answers between a and b", "positive count"},
		{"run lunchtime hooks", `no hook stage "lunchtime"`},
	} {
		_, err := upgradesim.ParseStep(tc.line)
		assert.ErrorContains(t, err, tc.err, tc.line)
	}
	p, err := upgradesim.ParsePlan("p", 1, "# a comment\n\n1. start kubelet at v1\n  2. wait 10ms\n")
	require.NoError(t, err)
	assert.Len(t, p.Steps, 2)
	_, err = upgradesim.ParsePlan("p", 1, "start kubelet at v1\nfly away\n")
	assert.ErrorContains(t, err, "line 2")
}

func TestPrepareRefusesImpossiblePlans(t *testing.T) {
	sim := mustSim(t, world{nodecontrollers: 3}.config())
	for _, tc := range []struct {
		plan string // the steps
		err  string // part of the error
	}{
		{"start nodecontroller at v1", "nodecontroller has 3 replicas: name one, as nodecontroller#0"},
		{"start nodecontroller#3 at v1", "has no replica 3"},
		{"start scheduler at v1", `no component "scheduler"`},
		{"start kubelet at v9", `kubelet has no version "v9"`},
		{"start kubelet at v1\nstart kubelet at v2", "kubelet is already running"},
		{"upgrade kubelet to v2", "kubelet is not running"},
		{"start kubelet at v2\nupgrade kubelet to v1", "v1 is not newer"},
		{"start kubelet at v1\nroll back kubelet to v2", "v2 is not older"},
		{"partition kubelet and kubelet", "the same component"},
		{"wait until warm within 1s", `no condition "warm"`},
	} {
		p := mustPlan(t, "bad", 1, tc.plan)
		_, err := sim.Prepare(p)
		assert.ErrorContains(t, err, tc.err, tc.plan)
	}
}

func TestNewRefusesBadDeclarations(t *testing.T) {
	good := world{}.config()
	for _, tc := range []struct {
		name   string                   // the mistake
		change func(*upgradesim.Config) // how it is made
		err    string                   // part of the error
	}{
		{"no versions", func(c *upgradesim.Config) { c.Components[0].Versions = nil }, "has no versions"},
		{"twice", func(c *upgradesim.Config) { c.Components = append(c.Components, c.Components[0]) }, "declared twice"},
		{"no start", func(c *upgradesim.Config) { c.Components[0].Versions[0].Start = nil }, "has no Start"},
		{"bad name", func(c *upgradesim.Config) { c.Components[0].Name = "node#controller" }, "without spaces or #"},
		{"unknown traffic", func(c *upgradesim.Config) { c.Traffic[0].To = "scheduler" }, "undeclared component"},
		{"builtin invariant", func(c *upgradesim.Config) {
			c.Invariants = []upgradesim.Invariant{{Name: upgradesim.InvariantVersions}}
		}, "built in"},
		{"hook without stage", func(c *upgradesim.Config) {
			c.Hooks = []upgradesim.Hook{{Name: "h", Run: nil}}
		}, "needs a name, a Run and a stage"},
	} {
		cfg := good
		cfg.Components = append([]upgradesim.Component(nil), good.Components...)
		for i := range cfg.Components {
			cfg.Components[i].Versions = append([]upgradesim.Version(nil), good.Components[i].Versions...)
		}
		cfg.Traffic = append([]upgradesim.Traffic(nil), good.Traffic...)
		tc.change(&cfg)
		_, err := upgradesim.New(cfg)
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

func TestSeedsReplayLockstepSeed(t *testing.T) {
	t.Setenv(upgradesim.SeedEnv, "")
	assert.Equal(t, []int64{5, 6, 7}, upgradesim.Seeds(5, 3))
	t.Setenv(upgradesim.SeedEnv, "42")
	assert.Equal(t, []int64{42}, upgradesim.Seeds(5, 3))
}
