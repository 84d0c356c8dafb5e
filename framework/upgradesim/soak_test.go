//go:build soak

package upgradesim_test

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// soakBase is the first seed of this soak's plans: it changes every run
// (it is logged; LOCKSTEP_SEED=n replays one plan), so that every soak
// explores new plans.
var soakBase = time.Now().UnixNano() % 1_000_000_000

// TestSoakRandomPlans runs 1,000 random plans with every default mutation
// and the external extender. make soak runs it and the two below.
func TestSoakRandomPlans(t *testing.T) {
	t.Logf("base seed %d", soakBase)
	runRandomPlans(t, randomWorld, upgradesim.Seeds(soakBase, 1000), upgradesim.DefaultMutations(), true, 6)
}

// TestSoakHeavyMutations runs 300 plans with harsher faults: more dropped
// answers, partitions, slow pairs and crashes.
func TestSoakHeavyMutations(t *testing.T) {
	t.Logf("base seed %d", soakBase+1000)
	runRandomPlans(t, randomWorld, upgradesim.Seeds(soakBase+1000, 300), upgradesim.HeavyMutations(), true, 6)
}

// TestSoakIdempotent runs 200 plans with Report declared idempotent.
func TestSoakIdempotent(t *testing.T) {
	t.Logf("base seed %d", soakBase+2000)
	runRandomPlans(t, idempotentWorld, upgradesim.Seeds(soakBase+2000, 200), upgradesim.DefaultMutations(), true, 6)
}
