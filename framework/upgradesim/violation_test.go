package upgradesim_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// mustPlan parses a plan or fails the test.
func mustPlan(t *testing.T, name string, seed int64, text string) upgradesim.Plan {
	t.Helper()
	p, err := upgradesim.ParsePlan(name, seed, text)
	require.NoError(t, err)
	return p
}

const upgradeServerFirst = `
start nodecontroller at v1
start kubelet at v1
wait until connected within 10s
upgrade nodecontroller to v2
upgrade kubelet to v2
wait until 10 calls acknowledged within 10s
`

const upgradeClientFirst = `
start nodecontroller at v1
start kubelet at v1
wait until connected within 10s
upgrade kubelet to v2
upgrade nodecontroller to v2
wait until 10 calls acknowledged within 10s
`

// TestKitCatchesEachBrokenInvariant runs deliberately broken components
// and checks that the kit fails naming the seed, the step and the
// invariant that broke.
func TestKitCatchesEachBrokenInvariant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string   // the broken behaviour
		world     world    // the system, with its broken part
		plan      string   // the steps
		invariant string   // the invariant that must break
		steps     []int    // the steps during which it may be seen
		message   []string // parts of its message
	}{
		{
			name:  "a server that accepts calls at any version",
			world: world{brokenV2: "any-version"},
			plan: `
start nodecontroller at v1
start kubelet at v1
wait until connected within 10s
upgrade nodecontroller to v2
wait until 10 calls acknowledged within 10s`,
			invariant: upgradesim.InvariantVersions,
			steps:     []int{4, 5},
			message:   []string{"from kubelet (v1, speaks nodeinfo 1.0.0) was processed by nodecontroller (v2, speaks nodeinfo 2.0.0) at nodeinfo 1.0.0"},
		},
		{
			name:  "a server that serves watches at any version",
			world: world{brokenV2: "any-version"},
			plan: `
start nodecontroller at v1
start kubelet at v1
wait until connected within 10s
upgrade nodecontroller to v2
wait until 10 calls acknowledged within 10s`,
			invariant: upgradesim.InvariantVersions,
			steps:     []int{4, 5},
			message:   []string{"watch of nodeinfo Nodes by kubelet (v1, speaks nodeinfo 1.0.0) was served by nodecontroller (v2, speaks nodeinfo 2.0.0) at nodeinfo 1.0.0"},
		},
		{
			name:      "a publisher that drops updates",
			world:     world{brokenV2: "drops-updates", bound: 300 * time.Millisecond},
			plan:      upgradeServerFirst,
			invariant: upgradesim.InvariantWatchersConverge,
			steps:     []int{7},
			message:   []string{"kubelet's view of Nodes@2.0.0", "matches no nodecontroller replica: nodecontroller: holds", "(after the last step)"},
		},
		{
			name:      "a handler that acknowledges without applying",
			world:     world{brokenV2: "no-apply"},
			plan:      upgradeClientFirst,
			invariant: upgradesim.InvariantNoLostCalls,
			steps:     []int{5, 6, 7},
			message:   []string{"from kubelet (v2) was acknowledged by nodecontroller at nodeinfo 2.0.0 but never applied"},
		},
		{
			name:      "a handler that applies twice",
			world:     world{brokenV2: "apply-twice"},
			plan:      upgradeServerFirst,
			invariant: upgradesim.InvariantAppliedOnce,
			steps:     []int{5, 6},
			message:   []string{"was applied 2 times; the last time by nodecontroller (v2)"},
		},
		{
			name:      "a handler that applies a keyed call twice",
			world:     world{brokenV2: "apply-twice", exactlyOnce: true},
			plan:      upgradeServerFirst,
			invariant: upgradesim.InvariantAppliedOnce,
			steps:     []int{5, 6},
			message:   []string{"was applied 2 times; the last time by nodecontroller (v2)", "key "},
		},
		{
			name:  "a contract changed without a version bump",
			world: world{brokenV2: "fingerprint", bound: 300 * time.Millisecond, timeout: time.Second},
			plan: `
start nodecontroller at v1
start kubelet at v1
wait until connected within 10s
upgrade nodecontroller to v2
upgrade kubelet to v2
wait 700ms`,
			invariant: upgradesim.InvariantBlockedBounded,
			steps:     []int{5, 6, 7},
			// Seen by the sampler during the run, or, on a starved machine,
			// by the settle after the last step.
			message: []string{"no session with nodecontroller", "although nodecontroller (v2, speaks nodeinfo 2.0.0)", "fingerprint_mismatch"},
		},
		{
			name:  "an external peer left behind by a lockstep upgrade",
			world: world{external: true, timeout: 500 * time.Millisecond},
			plan: `
start extender at v1
start nodecontroller at v1
start kubelet at v1
wait until connected within 10s
upgrade nodecontroller to v2
wait 1s`,
			invariant: upgradesim.InvariantExternalUninterrupted,
			steps:     []int{5, 6, 7},
			message:   []string{"from extender (v1) to nodecontroller failed after", "no compatible nodecontroller for nodeinfo 1.0.0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim, err := upgradesim.New(tc.world.config())
			require.NoError(t, err)
			rep, err := sim.Execute(context.Background(), mustPlan(t, "broken", 7, tc.plan))
			require.NoError(t, err)
			t.Logf("%s", rep.Timeline.Text())
			require.True(t, rep.Failed(), "the kit did not notice")
			var found []upgradesim.Violation
			for _, v := range rep.Violations {
				if v.Invariant == tc.invariant && strings.Contains(v.Message, tc.message[0]) {
					found = append(found, v)
				}
			}
			require.NotEmpty(t, found, "no %s violation saying %q among %v", tc.invariant, tc.message[0], rep.Violations)
			// The one that says all of the message: on a starved machine
			// a call can also time out before the fault it tests (the
			// external peer's calls get 500 ms), which the kit reports
			// too, first.
			v := found[0]
			for _, f := range found {
				if !slices.ContainsFunc(tc.message, func(part string) bool { return !strings.Contains(f.Message, part) }) {
					v = f
					break
				}
			}
			msg := v.Error()
			t.Log(msg)
			assert.Contains(t, msg, `plan "broken" seed 7`)
			assert.True(t, slices.Contains(tc.steps, v.Step), "seen at step %d: %s", v.Step, msg)
			assert.Contains(t, msg, fmt.Sprintf("step %d (%s)", v.Step, v.StepText))
			if v.Step <= len(rep.Plan.Steps) {
				assert.Equal(t, rep.Plan.Steps[v.Step-1].String(), v.StepText)
			}
			assert.Contains(t, msg, "invariant "+tc.invariant+" violated")
			for _, part := range tc.message {
				assert.Contains(t, msg, part)
			}
			assert.Contains(t, rep.Summary(), "verdict: violated "+tc.invariant)
			assert.True(t, strings.Contains(rep.Timeline.Text(), "violation"), "the timeline marks the violation")
		})
	}
}
