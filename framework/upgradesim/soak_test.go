//go:build soak

package upgradesim_test

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// TestSoakRandomPlans runs 1,000 random plans, with every mutation and the
// external extender, from a base seed that changes every run (it is
// logged; LOCKSTEP_SEED=n replays one plan), so that every soak explores
// new plans. make soak runs it.
func TestSoakRandomPlans(t *testing.T) {
	base := time.Now().UnixNano() % 1_000_000_000
	t.Logf("base seed %d", base)
	runRandomPlans(t, upgradesim.Seeds(base, 1000), upgradesim.DefaultMutations(), true, 6)
}
