package upgradesim

import (
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// Mutations tunes what a random plan does besides upgrading, as roachtest's
// mutators do: each probability is the chance, after each upgrade step,
// that the generator adds that event.
type Mutations struct {
	// Rollback rolls an upgraded replica back, to upgrade it again later.
	Rollback float64
	// Restart restarts a running replica at its version.
	Restart float64
	// Crash makes an upgrade, rollback or restart kill the old process
	// instead of draining it.
	Crash float64
	// Partition cuts a pair for the next step or two; Slow adds latency
	// to a pair and Drop loses its next answers, likewise.
	Partition float64
	Slow      float64
	Drop      float64
	// Wait pauses up to MaxWait while traffic flows.
	Wait    float64
	MaxWait time.Duration
	// MaxRollbacks bounds rollbacks per plan.
	MaxRollbacks int
}

// DefaultMutations are moderate probabilities that keep a plan short: a
// handful of steps, with waits of 20ms to 150ms between most of them so
// traffic flows in every state.
func DefaultMutations() Mutations {
	return Mutations{Rollback: 0.2, Restart: 0.15, Crash: 0.25, Partition: 0.15, Slow: 0.1, Drop: 0.15,
		Wait: 0.8, MaxWait: 150 * time.Millisecond, MaxRollbacks: 2}
}

// HeavyMutations are harsher than the defaults, for soaks: answers dropped
// three times as often, partitions and slow pairs twice as often, crashes
// in half of all stops, and longer waits so faults last while traffic
// flows.
func HeavyMutations() Mutations {
	return Mutations{Rollback: 0.2, Restart: 0.25, Crash: 0.5, Partition: 0.3, Slow: 0.25, Drop: 0.45,
		Wait: 0.8, MaxWait: 300 * time.Millisecond, MaxRollbacks: 3}
}

// SeedEnv names the environment variable that replays a seed.
const SeedEnv = "LOCKSTEP_SEED"

// SeedFromEnv returns the seed in LOCKSTEP_SEED, if it is set.
func SeedFromEnv() (int64, bool) {
	v := os.Getenv(SeedEnv)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// Seeds returns the seeds a randomised test runs: the one in
// LOCKSTEP_SEED alone when it is set, so that a failure replays, and
// otherwise n seeds counting from first.
func Seeds(first int64, n int) []int64 {
	if s, ok := SeedFromEnv(); ok {
		return []int64{s}
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}

// upgradeAction moves one replica to a version.
type upgradeAction struct {
	replica string
	comp    *Component
	to      int
}

// RandomPlan generates a plan from seed: a pure function of the seed, the
// declared components and traffic, and m. It starts every replica at its
// component's oldest version in a random order, waits until clients
// connect, then upgrades every replica of every component the plan
// controls (not external ones) one version at a time, interleaving the
// components at random, with rollbacks, restarts, kills, partitions,
// latency, dropped answers and waits drawn from m in between; it heals
// every fault, waits until clients connect, and, when there is traffic,
// until five more calls are acknowledged.
func (s *Sim) RandomPlan(seed int64, m Mutations) Plan {
	if m.MaxWait <= 20*time.Millisecond {
		m.MaxWait = 150 * time.Millisecond
	}
	g := &planner{s: s, m: m, rng: rand.New(rand.NewPCG(uint64(seed), 0x75706772616465)), // "upgrade"
		p: Plan{Name: "random", Seed: seed}, version: map[string]int{}, comps: map[string]*Component{},
		active: map[[2]string]bool{}}
	g.startAll()
	g.add(WaitUntil(Connected, s.cfg.BlockedBound))
	g.actions = g.upgradeOrder()
	g.faultPairs = s.faultPairs()
	for i := 0; i < len(g.actions); i++ {
		g.healDue()
		g.upgrade(g.actions[i])
		g.maybeRollback(i)
		g.maybeRestart()
		faulted := g.maybeFaults()
		// A fault is always given time to act.
		if faulted || g.rng.Float64() < m.Wait {
			g.wait()
		}
	}
	g.finish()
	return g.p
}

// planner is one random plan being drawn. Every step draws from rng in
// the order RandomPlan calls them, so a seed keeps its plan.
type planner struct {
	s   *Sim
	m   Mutations
	rng *rand.Rand
	p   Plan

	all     []string              // every replica, in declaration order
	comps   map[string]*Component // replica → its component
	version map[string]int        // replica → index of its version now

	actions    []upgradeAction    // the upgrades still to come, rollbacks' re-upgrades included
	rollbacks  int                // drawn so far
	faultPairs []pair             // the traffic pairs faults may cut
	heals      []pendingHeal      // faults to heal after later upgrades
	active     map[[2]string]bool // pairs with a fault not healed yet
}

// pendingHeal is a fault between a and b that heals after the given
// number of further upgrades.
type pendingHeal struct {
	a, b  string
	after int
}

func (g *planner) add(st Step) { g.p.Steps = append(g.p.Steps, st) }

// startAll starts every replica at its component's oldest version, in a
// random order.
func (g *planner) startAll() {
	for _, name := range g.s.order {
		c := g.s.components[name]
		for i := 0; i < c.replicas(); i++ {
			g.all = append(g.all, c.replicaName(i))
			g.comps[c.replicaName(i)] = c
		}
	}
	for _, i := range g.rng.Perm(len(g.all)) {
		g.add(Start(g.all[i], g.comps[g.all[i]].Versions[0].Name))
		g.version[g.all[i]] = 0
	}
}

// upgradeOrder is the order of the upgrades: each controlled component's
// replicas move one version at a time, in a random replica order; the
// components' sequences interleave at random.
func (g *planner) upgradeOrder() []upgradeAction {
	var queues [][]upgradeAction
	for _, name := range g.s.order {
		c := g.s.components[name]
		if c.External || len(c.Versions) < 2 {
			continue
		}
		var q []upgradeAction
		for vi := 1; vi < len(c.Versions); vi++ {
			for _, i := range g.rng.Perm(c.replicas()) {
				q = append(q, upgradeAction{replica: c.replicaName(i), comp: c, to: vi})
			}
		}
		queues = append(queues, q)
	}
	var actions []upgradeAction
	for remaining := len(queues); remaining > 0; {
		total := 0
		for _, q := range queues {
			total += len(q)
		}
		pick := g.rng.IntN(total)
		for qi, q := range queues {
			if pick < len(q) {
				actions = append(actions, q[0])
				queues[qi] = q[1:]
				if len(queues[qi]) == 0 {
					remaining--
				}
				break
			}
			pick -= len(q)
		}
	}
	return actions
}

// faultPairs are the traffic pairs between controlled components, once
// each: the pairs a plan may partition, slow or drop answers on.
func (s *Sim) faultPairs() []pair {
	var pairs []pair
	for _, tr := range s.cfg.Traffic {
		if !s.components[tr.From].External && !s.components[tr.To].External {
			pairs = appendPair(pairs, pair{tr.From, tr.To})
		}
	}
	return pairs
}

// healDue heals the faults whose time has come: faults added after
// earlier upgrades heal after theirs.
func (g *planner) healDue() {
	kept := g.heals[:0]
	for _, h := range g.heals {
		if h.after--; h.after <= 0 {
			g.add(Heal(h.a, h.b))
			delete(g.active, [2]string{h.a, h.b})
			continue
		}
		kept = append(kept, h)
	}
	g.heals = kept
}

// replace is st, or st without its drain (a kill) with the chance of a
// crash.
func (g *planner) replace(st Step) Step {
	if g.rng.Float64() < g.m.Crash {
		return st.WithoutDrain()
	}
	return st
}

// upgrade adds the upgrade a.
func (g *planner) upgrade(a upgradeAction) {
	g.add(g.replace(Upgrade(a.replica, a.comp.Versions[a.to].Name)))
	g.version[a.replica] = a.to
}

// maybeRollback, with the chance of a rollback while rollbacks are left,
// rolls an upgraded replica back one version and schedules its upgrade
// again after action i, before any later move of the same replica.
func (g *planner) maybeRollback(i int) {
	if g.rollbacks >= g.m.MaxRollbacks || g.rng.Float64() >= g.m.Rollback {
		return
	}
	var upgraded []string
	for _, r := range g.all {
		if !g.comps[r].External && g.version[r] > 0 {
			upgraded = append(upgraded, r)
		}
	}
	if len(upgraded) == 0 {
		return
	}
	r := upgraded[g.rng.IntN(len(upgraded))]
	c := g.comps[r]
	to := g.version[r]
	g.add(g.replace(Rollback(r, c.Versions[to-1].Name)))
	g.version[r] = to - 1
	g.rollbacks++
	limit := len(g.actions)
	for j := i + 1; j < len(g.actions); j++ {
		if g.actions[j].replica == r {
			limit = j
			break
		}
	}
	at := i + 1 + g.rng.IntN(limit-i)
	g.actions = append(g.actions[:at], append([]upgradeAction{{replica: r, comp: c, to: to}}, g.actions[at:]...)...)
}

// maybeRestart, with the chance of a restart, restarts a controlled
// replica.
func (g *planner) maybeRestart() {
	if g.rng.Float64() >= g.m.Restart {
		return
	}
	var controlled []string
	for _, r := range g.all {
		if !g.comps[r].External {
			controlled = append(controlled, r)
		}
	}
	g.add(g.replace(Restart(controlled[g.rng.IntN(len(controlled))])))
}

// maybeFaults draws a partition, a slow pair and dropped answers, each
// with its chance, on a pair with no fault yet (a component's pair or one
// replica's), to heal after one or two more upgrades. It reports whether
// it added any.
func (g *planner) maybeFaults() (faulted bool) {
	for _, op := range []Op{OpPartition, OpSlow, OpDrop} {
		chance := map[Op]float64{OpPartition: g.m.Partition, OpSlow: g.m.Slow, OpDrop: g.m.Drop}[op]
		if len(g.faultPairs) == 0 || g.rng.Float64() >= chance {
			continue
		}
		fp := g.faultPairs[g.rng.IntN(len(g.faultPairs))]
		x, y := fp.from, fp.to
		if n := g.s.components[y].replicas(); n > 1 && g.rng.IntN(2) == 0 {
			y = Replica(y, g.rng.IntN(n))
		}
		if g.active[[2]string{x, y}] {
			continue
		}
		g.active[[2]string{x, y}] = true
		switch op {
		case OpPartition:
			g.add(Partition(x, y))
		case OpSlow:
			g.add(Slow(x, y, time.Duration(5+g.rng.IntN(36))*time.Millisecond))
		case OpDrop:
			g.add(Drop(x, y, 1+g.rng.IntN(3)))
		}
		g.heals = append(g.heals, pendingHeal{a: x, b: y, after: 1 + g.rng.IntN(2)})
		faulted = true
	}
	return faulted
}

// wait adds a wait of 20ms up to MaxWait.
func (g *planner) wait() {
	g.add(Wait(time.Duration(20+g.rng.Int64N(int64((g.m.MaxWait-20*time.Millisecond)/time.Millisecond))) * time.Millisecond))
}

// finish heals every fault left and waits until clients connect and,
// with traffic, until five more calls are acknowledged.
func (g *planner) finish() {
	for _, h := range g.heals {
		g.add(Heal(h.a, h.b))
	}
	g.add(WaitUntil(Connected, g.s.cfg.BlockedBound))
	if len(g.s.cfg.Traffic) > 0 {
		g.add(WaitUntil(CallsAcknowledged(5), g.s.cfg.BlockedBound))
	}
}

func appendPair(list []pair, p pair) []pair {
	for _, q := range list {
		if q == p {
			return list
		}
	}
	return append(list, p)
}
