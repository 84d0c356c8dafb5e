package upgradesim_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// randomWorld picks the system a seed's plan runs against, so that the
// plans cover lockstep and fork mode, single replicas and replica sets,
// plain and keyed calls, and, when external is set, fork mode with an
// external peer.
func randomWorld(seed int64, external bool) world {
	var w world
	switch seed % 4 {
	case 1:
		w = world{fork: true, external: external}
	case 2:
		w = world{nodecontrollers: 3, kubelets: 2}
	case 3:
		w = world{fork: true, external: external, nodecontrollers: 2}
	}
	// Half the worlds' kubelets key every call (ClientConfig.ExactlyOnce).
	w.exactlyOnce = seed%8 >= 4
	return w
}

// idempotentWorld is randomWorld with Report declared idempotent, so
// clients resend it after failures that leave its fate unknown.
func idempotentWorld(seed int64, external bool) world {
	w := randomWorld(seed, external)
	w.idempotent = true
	return w
}

// runRandomPlans runs a random plan per seed, generated with m, at most concurrency at once
// (the plans mostly wait on the network, so more run at once than there
// are cores) and more than one only while the process keeps time (see
// planGate), and reports each as a subtest named after its seed.
func runRandomPlans(t *testing.T, worldOf func(seed int64, external bool) world, seeds []int64, m upgradesim.Mutations, external bool, concurrency int) {
	type result struct {
		plan upgradesim.Plan
		rep  *upgradesim.Report
		err  error
	}
	results := make([]result, len(seeds))
	gate := newPlanGate(concurrency)
	defer gate.close()
	began := time.Now()
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Add(1)
		gate.enter()
		go func() {
			defer wg.Done()
			defer gate.leave()
			sim, err := upgradesim.New(worldOf(seed, external).config())
			if err != nil {
				results[i].err = err
				return
			}
			results[i].plan = sim.RandomPlan(seed, m)
			results[i].rep, results[i].err = sim.Execute(context.Background(), results[i].plan)
		}()
	}
	wg.Wait()
	byInvariant := map[string]int{}
	for _, r := range results {
		if r.rep != nil {
			for _, v := range r.rep.Violations {
				byInvariant[v.Invariant]++
			}
		}
	}
	t.Logf("%d plans in %s, at most %d at once (of %d allowed; the 90th percentile of this process's timers' lateness at the end: %s); violations by invariant: %v",
		len(seeds), time.Since(began).Round(time.Second), gate.peak, gate.most, gate.meter.p90(), byInvariant)
	for i, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := results[i]
			require.NoError(t, r.err)
			t.Logf("world: %s\n%s%s", worldOf(seed, external), r.rep.Plan, r.rep.Timeline.Text())
			for _, v := range r.rep.Violations {
				t.Errorf("%v (replay: LOCKSTEP_SEED=%d go test -run %s)", v, seed, t.Name()[:len(t.Name())-len("/seed=")-len(fmt.Sprint(seed))])
			}
		})
	}
}

// testMutations are the mutations make test's random plans draw from: the
// defaults, dropped answers included. The plans include the external
// extender, as make soak's do.
func testMutations() upgradesim.Mutations {
	return upgradesim.DefaultMutations()
}

// TestRandomPlans runs 50 seeded random plans, four at a time, the
// external extender in the fork-mode worlds; each is a few steps with
// short waits. LOCKSTEP_SEED=n runs seed n alone.
func TestRandomPlans(t *testing.T) {
	runRandomPlans(t, randomWorld, upgradesim.Seeds(1, 50), testMutations(), true, 4)
}

// TestRandomPlansIdempotent runs 50 seeded random plans against the same
// worlds with Report declared idempotent: resends after ambiguous failures
// apply it again, which its effects allow.
func TestRandomPlansIdempotent(t *testing.T) {
	runRandomPlans(t, idempotentWorld, upgradesim.Seeds(1001, 50), testMutations(), true, 4)
}
