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
	rng := rand.New(rand.NewPCG(uint64(seed), 0x75706772616465)) // "upgrade"
	p := Plan{Name: "random", Seed: seed}
	add := func(st Step) { p.Steps = append(p.Steps, st) }

	var all []string
	version := map[string]int{}
	comps := map[string]*Component{}
	for _, name := range s.order {
		c := s.components[name]
		for i := 0; i < c.replicas(); i++ {
			all = append(all, c.replicaName(i))
			comps[c.replicaName(i)] = c
		}
	}
	for _, i := range rng.Perm(len(all)) {
		add(Start(all[i], comps[all[i]].Versions[0].Name))
		version[all[i]] = 0
	}
	add(WaitUntil(Connected, s.cfg.BlockedBound))

	// Each controlled component's replicas move one version at a time, in
	// a random replica order; the components' sequences interleave at
	// random.
	var queues [][]upgradeAction
	for _, name := range s.order {
		c := s.components[name]
		if c.External || len(c.Versions) < 2 {
			continue
		}
		var q []upgradeAction
		for vi := 1; vi < len(c.Versions); vi++ {
			for _, i := range rng.Perm(c.replicas()) {
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
		pick := rng.IntN(total)
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

	var faultPairs []pair
	for _, tr := range s.cfg.Traffic {
		if !s.components[tr.From].External && !s.components[tr.To].External {
			faultPairs = appendPair(faultPairs, pair{tr.From, tr.To})
		}
	}
	type pending struct {
		a, b  string
		after int
	}
	var heals []pending
	active := map[[2]string]bool{}
	replace := func(st Step) Step {
		if rng.Float64() < m.Crash {
			return st.WithoutDrain()
		}
		return st
	}
	rollbacks := 0
	for i := 0; i < len(actions); i++ {
		// Faults added after earlier upgrades heal after theirs.
		kept := heals[:0]
		for _, h := range heals {
			if h.after--; h.after <= 0 {
				add(Heal(h.a, h.b))
				delete(active, [2]string{h.a, h.b})
				continue
			}
			kept = append(kept, h)
		}
		heals = kept
		a := actions[i]
		add(replace(Upgrade(a.replica, a.comp.Versions[a.to].Name)))
		version[a.replica] = a.to

		if rollbacks < m.MaxRollbacks && rng.Float64() < m.Rollback {
			var upgraded []string
			for _, r := range all {
				if !comps[r].External && version[r] > 0 {
					upgraded = append(upgraded, r)
				}
			}
			if len(upgraded) > 0 {
				r := upgraded[rng.IntN(len(upgraded))]
				c := comps[r]
				to := version[r]
				add(replace(Rollback(r, c.Versions[to-1].Name)))
				version[r] = to - 1
				rollbacks++
				// Upgrade it again later, before any later move of the
				// same replica.
				limit := len(actions)
				for j := i + 1; j < len(actions); j++ {
					if actions[j].replica == r {
						limit = j
						break
					}
				}
				at := i + 1 + rng.IntN(limit-i)
				actions = append(actions[:at], append([]upgradeAction{{replica: r, comp: c, to: to}}, actions[at:]...)...)
			}
		}
		if rng.Float64() < m.Restart {
			var controlled []string
			for _, r := range all {
				if !comps[r].External {
					controlled = append(controlled, r)
				}
			}
			add(replace(Restart(controlled[rng.IntN(len(controlled))])))
		}
		faulted := false
		for _, op := range []Op{OpPartition, OpSlow, OpDrop} {
			chance := map[Op]float64{OpPartition: m.Partition, OpSlow: m.Slow, OpDrop: m.Drop}[op]
			if len(faultPairs) == 0 || rng.Float64() >= chance {
				continue
			}
			fp := faultPairs[rng.IntN(len(faultPairs))]
			x, y := fp.from, fp.to
			if n := s.components[y].replicas(); n > 1 && rng.IntN(2) == 0 {
				y = Replica(y, rng.IntN(n))
			}
			if active[[2]string{x, y}] {
				continue
			}
			active[[2]string{x, y}] = true
			switch op {
			case OpPartition:
				add(Partition(x, y))
			case OpSlow:
				add(Slow(x, y, time.Duration(5+rng.IntN(36))*time.Millisecond))
			case OpDrop:
				add(Drop(x, y, 1+rng.IntN(3)))
			}
			heals = append(heals, pending{a: x, b: y, after: 1 + rng.IntN(2)})
			faulted = true
		}
		// A fault is always given time to act.
		if faulted || rng.Float64() < m.Wait {
			add(Wait(time.Duration(20+rng.Int64N(int64((m.MaxWait-20*time.Millisecond)/time.Millisecond))) * time.Millisecond))
		}
	}
	for _, h := range heals {
		add(Heal(h.a, h.b))
	}
	add(WaitUntil(Connected, s.cfg.BlockedBound))
	if len(s.cfg.Traffic) > 0 {
		add(WaitUntil(CallsAcknowledged(5), s.cfg.BlockedBound))
	}
	return p
}

func appendPair(list []pair, p pair) []pair {
	for _, q := range list {
		if q == p {
			return list
		}
	}
	return append(list, p)
}
