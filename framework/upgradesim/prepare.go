package upgradesim

import (
	"fmt"
	"slices"
)

// planState is the replicas' versions as a plan moves them, without
// running anything: the version index of every replica, -1 when down.
type planState struct {
	s        *Sim
	versions map[string]int // by replica name
}

func (s *Sim) newPlanState() *planState {
	ps := &planState{s: s, versions: map[string]int{}}
	for _, name := range s.order {
		c := s.components[name]
		for i := 0; i < c.replicas(); i++ {
			ps.versions[c.replicaName(i)] = -1
		}
	}
	return ps
}

// resolveReplica resolves a lifecycle step's target to one replica.
func (s *Sim) resolveReplica(target string) (*Component, int, error) {
	name, idx, err := splitTarget(target)
	if err != nil {
		return nil, 0, err
	}
	c := s.components[name]
	if c == nil {
		return nil, 0, fmt.Errorf("no component %q", name)
	}
	if idx < 0 {
		if c.replicas() > 1 {
			return nil, 0, fmt.Errorf("%s has %d replicas: name one, as %s", name, c.replicas(), Replica(name, 0))
		}
		idx = 0
	}
	if idx >= c.replicas() {
		return nil, 0, fmt.Errorf("%s has no replica %d (it has %d)", name, idx, c.replicas())
	}
	return c, idx, nil
}

// resolveSide checks one side of a pair step: a component, or a replica.
func (s *Sim) resolveSide(side string) (*Component, error) {
	name, idx, err := splitTarget(side)
	if err != nil {
		return nil, err
	}
	c := s.components[name]
	if c == nil {
		return nil, fmt.Errorf("no component %q", name)
	}
	if idx >= c.replicas() {
		return nil, fmt.Errorf("%s has no replica %d", name, idx)
	}
	return c, nil
}

// apply checks one step against the state and moves the state past it; it
// returns the step with its target in canonical form.
func (ps *planState) apply(st Step) (Step, error) {
	s := ps.s
	switch st.Op {
	case OpStart, OpStop, OpKill, OpUpgrade, OpRollback, OpRestart:
		c, idx, err := s.resolveReplica(st.Target)
		if err != nil {
			return st, err
		}
		st.Target = c.replicaName(idx)
		cur := ps.versions[st.Target]
		want := -1
		if st.Op == OpStart || st.Op == OpUpgrade || st.Op == OpRollback {
			if want = c.versionIndex(st.Version); want < 0 {
				return st, fmt.Errorf("%s has no version %q", c.Name, st.Version)
			}
		}
		switch {
		case st.Op == OpStart && cur >= 0:
			return st, fmt.Errorf("%s is already running", st.Target)
		case st.Op != OpStart && cur < 0:
			return st, fmt.Errorf("%s is not running", st.Target)
		case st.Op == OpUpgrade && want <= cur:
			return st, fmt.Errorf("%s runs %s: %s is not newer", st.Target, c.Versions[cur].Name, st.Version)
		case st.Op == OpRollback && want >= cur:
			return st, fmt.Errorf("%s runs %s: %s is not older", st.Target, c.Versions[cur].Name, st.Version)
		}
		switch st.Op {
		case OpStart, OpUpgrade, OpRollback:
			ps.versions[st.Target] = want
		case OpStop, OpKill:
			ps.versions[st.Target] = -1
		}
	case OpPartition, OpSlow, OpDrop, OpHeal:
		a, err := s.resolveSide(st.Target)
		if err != nil {
			return st, err
		}
		b, err := s.resolveSide(st.Peer)
		if err != nil {
			return st, err
		}
		if a == b {
			return st, fmt.Errorf("%s and %s are the same component", st.Target, st.Peer)
		}
		if st.Op == OpSlow && st.Duration <= 0 {
			return st, fmt.Errorf("slow needs a positive latency")
		}
		if st.Op == OpDrop && st.Count <= 0 {
			return st, fmt.Errorf("drop needs a positive count")
		}
	case OpWait:
		if st.Duration <= 0 {
			return st, fmt.Errorf("wait needs a positive duration")
		}
	case OpWaitUntil:
		if st.Duration <= 0 {
			return st, fmt.Errorf("wait until needs a positive bound")
		}
		if st.Until.Holds == nil {
			i := slices.IndexFunc(s.cfg.Conditions, func(c Condition) bool { return c.Name == st.Until.Name })
			if i < 0 {
				return st, fmt.Errorf("no condition %q: declare it in Config.Conditions", st.Until.Name)
			}
			st.Until = s.cfg.Conditions[i]
		}
	case OpHooks:
		if !st.Stage.valid() {
			return st, fmt.Errorf("no hook stage %q", st.Stage)
		}
	default:
		return st, fmt.Errorf("unknown op %d", int(st.Op))
	}
	return st, nil
}

// allUp reports whether every replica runs.
func (ps *planState) allUp() bool {
	for _, v := range ps.versions {
		if v < 0 {
			return false
		}
	}
	return true
}

// mixed reports whether the running replicas of the components the plan
// controls run different versions (by position in their Versions).
func (ps *planState) mixed() bool {
	seen := -1
	for name, v := range ps.versions {
		c, _, _ := ps.s.resolveReplica(name)
		if v < 0 || c.External {
			continue
		}
		if seen >= 0 && v != seen {
			return true
		}
		seen = v
	}
	return false
}

// upgraded reports whether every replica of every component the plan
// controls runs its newest version.
func (ps *planState) upgraded() bool {
	for name, v := range ps.versions {
		c, _, _ := ps.s.resolveReplica(name)
		if c.External || len(c.Versions) < 2 {
			continue
		}
		if v != len(c.Versions)-1 {
			return false
		}
	}
	return true
}

// Prepare checks plan against the declared components (every target,
// version and condition exists; every step is possible where it stands)
// and returns it as it runs: targets in canonical form, conditions
// resolved, and a hooks step inserted for each stage that has hooks but no
// step: startup hooks once every replica first runs, mixed-version hooks
// after the first upgrade or rollback that leaves versions mixed, and
// after-upgrade hooks once every controlled component first runs its
// newest version (each after the wait-until that follows, if any).
func (s *Sim) Prepare(plan Plan) (Plan, error) {
	has := map[Stage]bool{}
	for _, st := range plan.Steps {
		if st.Op == OpHooks {
			has[st.Stage] = true
		}
	}
	want := map[Stage]bool{}
	for _, h := range s.cfg.Hooks {
		if !has[h.Stage] {
			want[h.Stage] = true
		}
	}
	ps := s.newPlanState()
	out := plan
	out.Steps = nil
	upgradedAny := false
	pending := []Stage{}
	flush := func() {
		for _, st := range pending {
			out.Steps = append(out.Steps, RunHooks(st))
		}
		pending = pending[:0]
	}
	for i, st := range plan.Steps {
		st, err := ps.apply(st)
		if err != nil {
			return Plan{}, fmt.Errorf("upgradesim: plan %q step %d (%s): %w", plan.Name, i+1, plan.Steps[i], err)
		}
		if st.Op != OpWaitUntil {
			flush()
		}
		out.Steps = append(out.Steps, st)
		if st.Op == OpWaitUntil {
			flush()
		}
		if st.Op == OpUpgrade {
			upgradedAny = true
		}
		if want[StageStartup] && ps.allUp() {
			want[StageStartup] = false
			pending = append(pending, StageStartup)
		}
		if want[StageMixedVersion] && (st.Op == OpUpgrade || st.Op == OpRollback) && ps.mixed() {
			want[StageMixedVersion] = false
			pending = append(pending, StageMixedVersion)
		}
		if want[StageAfterUpgrade] && upgradedAny && ps.upgraded() {
			want[StageAfterUpgrade] = false
			pending = append(pending, StageAfterUpgrade)
		}
	}
	flush()
	return out, nil
}
