package upgradesim

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Op is what a [Step] does.
type Op int

// The operations of a plan. Lifecycle steps act on one replica; pair steps
// act on the traffic between two sides, each a component (all its
// replicas) or one replica.
const (
	// OpStart starts a replica at a version.
	OpStart Op = iota + 1
	// OpStop drains a replica and stops it.
	OpStop
	// OpKill stops a replica at once, without draining, as a crash does.
	OpKill
	// OpUpgrade replaces a running replica in place by a newer version.
	OpUpgrade
	// OpRollback replaces a running replica in place by an older version.
	OpRollback
	// OpRestart replaces a running replica in place by the same version.
	OpRestart
	// OpPartition cuts every request between two sides.
	OpPartition
	// OpSlow adds latency to every request between two sides.
	OpSlow
	// OpDrop loses the answers of the next calls between two sides after
	// the server processed them, as a connection dropped mid-call does.
	OpDrop
	// OpHeal removes every fault between two sides.
	OpHeal
	// OpWait pauses the plan while traffic flows.
	OpWait
	// OpWaitUntil pauses the plan until a [Condition] holds, within a
	// bound.
	OpWaitUntil
	// OpHooks runs the user's hooks of a [Stage].
	OpHooks
)

// Step is one numbered step of a [Plan]. Build steps with [Start],
// [Upgrade], [Partition] and the like, or parse them with [ParseStep]; a
// step prints as the line [ParseStep] reads back.
type Step struct {
	Op Op
	// Target is the replica a lifecycle step acts on ("kubelet" for a
	// component with one replica, "nodecontroller#1" otherwise), or the
	// first side of a pair step (a component, or one replica).
	Target string
	// Peer is the second side of a pair step.
	Peer string
	// Version is the version a start, upgrade or rollback moves to.
	Version string
	// NoDrain makes an upgrade, rollback or restart kill the old process
	// instead of draining it.
	NoDrain bool
	// Duration is how long a wait lasts, the latency a slow step adds, or
	// the bound of a wait-until.
	Duration time.Duration
	// Count is how many answers a drop step loses.
	Count int
	// Until is the condition a wait-until waits for.
	Until Condition
	// Stage names the hooks a hooks step runs.
	Stage Stage
}

// Start starts replica target ("kubelet", "nodecontroller#1") at version.
func Start(target, version string) Step { return Step{Op: OpStart, Target: target, Version: version} }

// Stop drains replica target and stops it.
func Stop(target string) Step { return Step{Op: OpStop, Target: target} }

// Kill stops replica target at once, without draining: its connections
// are cut and calls in flight fail, as in a crash.
func Kill(target string) Step { return Step{Op: OpKill, Target: target} }

// Upgrade replaces running replica target by version, at the same
// address: the old process drains, then the new one starts.
func Upgrade(target, version string) Step {
	return Step{Op: OpUpgrade, Target: target, Version: version}
}

// Rollback replaces running replica target by an older version, in place.
func Rollback(target, version string) Step {
	return Step{Op: OpRollback, Target: target, Version: version}
}

// Restart replaces running replica target by a fresh process of the same
// version, in place.
func Restart(target string) Step { return Step{Op: OpRestart, Target: target} }

// WithoutDrain returns the step with the old process killed instead of
// drained; it applies to upgrades, rollbacks and restarts.
func (s Step) WithoutDrain() Step {
	s.NoDrain = true
	return s
}

// Partition cuts every request between a and b (components or replicas),
// both ways, until [Heal]: new requests fail as if the peer were
// unreachable.
func Partition(a, b string) Step { return Step{Op: OpPartition, Target: a, Peer: b} }

// Slow adds latency to every request between a and b until [Heal].
func Slow(a, b string, latency time.Duration) Step {
	return Step{Op: OpSlow, Target: a, Peer: b, Duration: latency}
}

// Drop loses the answers of the next n calls between a and b: each call
// reaches its server and is processed, then the connection drops before
// the caller reads the answer.
func Drop(a, b string, n int) Step { return Step{Op: OpDrop, Target: a, Peer: b, Count: n} }

// Heal removes every fault between a and b.
func Heal(a, b string) Step { return Step{Op: OpHeal, Target: a, Peer: b} }

// Wait pauses the plan for d while traffic flows.
func Wait(d time.Duration) Step { return Step{Op: OpWait, Duration: d} }

// WaitUntil pauses the plan until cond holds; if it does not within bound,
// the step fails.
func WaitUntil(cond Condition, bound time.Duration) Step {
	return Step{Op: OpWaitUntil, Until: cond, Duration: bound}
}

// RunHooks runs the hooks of stage. [Sim.Run] inserts such a step where a
// plan has hooks of a stage but no step for it.
func RunHooks(stage Stage) Step { return Step{Op: OpHooks, Stage: stage} }

// Replica names replica i of a component, as steps and reports do:
// "nodecontroller#1".
func Replica(component string, i int) string { return component + "#" + strconv.Itoa(i) }

// String prints the step as the line [ParseStep] reads.
func (s Step) String() string {
	drain := ""
	if s.NoDrain {
		drain = " without drain"
	}
	switch s.Op {
	case OpStart:
		return fmt.Sprintf("start %s at %s", s.Target, s.Version)
	case OpStop:
		return "stop " + s.Target
	case OpKill:
		return "kill " + s.Target
	case OpUpgrade:
		return fmt.Sprintf("upgrade %s to %s%s", s.Target, s.Version, drain)
	case OpRollback:
		return fmt.Sprintf("roll back %s to %s%s", s.Target, s.Version, drain)
	case OpRestart:
		return fmt.Sprintf("restart %s%s", s.Target, drain)
	case OpPartition:
		return fmt.Sprintf("partition %s and %s", s.Target, s.Peer)
	case OpSlow:
		return fmt.Sprintf("slow %s and %s by %s", s.Target, s.Peer, s.Duration)
	case OpDrop:
		noun := "answers"
		if s.Count == 1 {
			noun = "answer"
		}
		return fmt.Sprintf("drop the next %d %s between %s and %s", s.Count, noun, s.Target, s.Peer)
	case OpHeal:
		return fmt.Sprintf("heal %s and %s", s.Target, s.Peer)
	case OpWait:
		return "wait " + s.Duration.String()
	case OpWaitUntil:
		return fmt.Sprintf("wait until %s within %s", s.Until.Name, s.Duration)
	case OpHooks:
		return fmt.Sprintf("run %s hooks", s.Stage)
	}
	return fmt.Sprintf("step with unknown op %d", int(s.Op))
}

// Plan is a list of steps run in order, named for people and seeded. A
// random plan is a pure function of its seed ([Sim.RandomPlan]); an
// explicit plan's seed only names the run.
type Plan struct {
	// Name says what the plan tests.
	Name string
	// Seed generated the plan, and replays it through LOCKSTEP_SEED.
	Seed int64
	// Steps run in order; reports number them from 1.
	Steps []Step
}

// String prints the plan as numbered steps, the way it is logged before it
// runs.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %q, seed %d, %d steps:\n", p.Name, p.Seed, len(p.Steps))
	width := len(strconv.Itoa(len(p.Steps)))
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "  %*d. %s\n", width, i+1, s)
	}
	return b.String()
}

var (
	numbered    = regexp.MustCompile(`^\d+\.\s+`)
	reStart     = regexp.MustCompile(`^start (\S+) at (\S+)$`)
	reStop      = regexp.MustCompile(`^stop (\S+)$`)
	reKill      = regexp.MustCompile(`^kill (\S+)$`)
	reUpgrade   = regexp.MustCompile(`^upgrade (\S+) to (\S+?)( without drain)?$`)
	reRollback  = regexp.MustCompile(`^roll back (\S+) to (\S+?)( without drain)?$`)
	reRestart   = regexp.MustCompile(`^restart (\S+?)( without drain)?$`)
	rePartition = regexp.MustCompile(`^partition (\S+) and (\S+)$`)
	reSlow      = regexp.MustCompile(`^slow (\S+) and (\S+) by (\S+)$`)
	reDrop      = regexp.MustCompile(`^drop the next (\d+) answers? between (\S+) and (\S+)$`)
	reHeal      = regexp.MustCompile(`^heal (\S+) and (\S+)$`)
	reWait      = regexp.MustCompile(`^wait (\S+)$`)
	reWaitUntil = regexp.MustCompile(`^wait until (.+) within (\S+)$`)
	reHooks     = regexp.MustCompile(`^run (\S+) hooks$`)
)

// ParseStep reads one step as [Step.String] prints it; a leading "7." is
// ignored. A wait-until names its condition: "connected", "N calls
// acknowledged", or a condition of [Config.Conditions], resolved when the
// plan runs.
func ParseStep(line string) (Step, error) {
	line = numbered.ReplaceAllString(strings.TrimSpace(line), "")
	duration := func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("step %q: %q is not a positive duration such as 200ms", line, s)
		}
		return d, nil
	}
	if m := reStart.FindStringSubmatch(line); m != nil {
		return Start(m[1], m[2]), nil
	}
	if m := reStop.FindStringSubmatch(line); m != nil {
		return Stop(m[1]), nil
	}
	if m := reKill.FindStringSubmatch(line); m != nil {
		return Kill(m[1]), nil
	}
	if m := reUpgrade.FindStringSubmatch(line); m != nil {
		return Step{Op: OpUpgrade, Target: m[1], Version: m[2], NoDrain: m[3] != ""}, nil
	}
	if m := reRollback.FindStringSubmatch(line); m != nil {
		return Step{Op: OpRollback, Target: m[1], Version: m[2], NoDrain: m[3] != ""}, nil
	}
	if m := reRestart.FindStringSubmatch(line); m != nil {
		return Step{Op: OpRestart, Target: m[1], NoDrain: m[2] != ""}, nil
	}
	if m := rePartition.FindStringSubmatch(line); m != nil {
		return Partition(m[1], m[2]), nil
	}
	if m := reSlow.FindStringSubmatch(line); m != nil {
		d, err := duration(m[3])
		if err != nil {
			return Step{}, err
		}
		return Slow(m[1], m[2], d), nil
	}
	if m := reDrop.FindStringSubmatch(line); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n <= 0 {
			return Step{}, fmt.Errorf("step %q: drop needs a positive count", line)
		}
		return Drop(m[2], m[3], n), nil
	}
	if m := reHeal.FindStringSubmatch(line); m != nil {
		return Heal(m[1], m[2]), nil
	}
	if m := reWaitUntil.FindStringSubmatch(line); m != nil {
		d, err := duration(m[2])
		if err != nil {
			return Step{}, err
		}
		return WaitUntil(parseCondition(m[1]), d), nil
	}
	if m := reWait.FindStringSubmatch(line); m != nil {
		d, err := duration(m[1])
		if err != nil {
			return Step{}, err
		}
		return Wait(d), nil
	}
	if m := reHooks.FindStringSubmatch(line); m != nil {
		st := Stage(m[1])
		if !st.valid() {
			return Step{}, fmt.Errorf("step %q: no hook stage %q (stages: %s, %s, %s)", line, m[1],
				StageStartup, StageMixedVersion, StageAfterUpgrade)
		}
		return RunHooks(st), nil
	}
	return Step{}, fmt.Errorf("step %q: not a step (start, stop, kill, upgrade, roll back, restart, "+
		"partition, slow, drop, heal, wait, wait until, run … hooks)", line)
}

// ParsePlan reads a plan written one step per line, as [Plan.String] prints
// its steps; blank lines and lines starting with # are skipped, and so is a
// "plan …" header line.
func ParsePlan(name string, seed int64, text string) (Plan, error) {
	p := Plan{Name: name, Seed: seed}
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "plan ") {
			continue
		}
		s, err := ParseStep(line)
		if err != nil {
			return Plan{}, fmt.Errorf("line %d: %w", n, err)
		}
		p.Steps = append(p.Steps, s)
	}
	return p, sc.Err()
}
