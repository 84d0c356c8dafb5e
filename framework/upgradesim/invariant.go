package upgradesim

import (
	"fmt"
	"strings"
	"time"
)

// Names of the built-in invariants, as violations report them.
const (
	// InvariantVersions: no call is processed, and no watch stream served,
	// at a contract version that its client or its server does not speak
	// (see [Version.Speaks]). A
	// call stamped by its client must be handled at the client's own
	// version or one its declared fork connects it to, by a server that
	// declares it.
	InvariantVersions = "versions-agree"
	// InvariantNoLostCalls: every acknowledged call was applied.
	InvariantNoLostCalls = "no-lost-calls"
	// InvariantAppliedOnce: no call was applied twice.
	InvariantAppliedOnce = "applied-once"
	// InvariantBlockedBounded: no client stays without a session for longer
	// than [Config.BlockedBound] while a compatible server is available to
	// it.
	InvariantBlockedBounded = "blocked-bounded"
	// InvariantExternalUninterrupted: no call of an external component, and
	// no call to one, fails, unless a fault the plan injected touched it: a
	// partition, latency or dropped answers on its pair while it ran, or a
	// kill of either side from the kill until shortly after the replica is
	// back (its peers' pooled connections to the dead process fail once).
	// Graceful stops, upgrades and rollbacks excuse nothing.
	InvariantExternalUninterrupted = "external-uninterrupted"
	// InvariantObserved: calls reached a component whose handlers the kit
	// never saw, so the other invariants could not check them; build
	// servers with [Env.ServerConfig].
	InvariantObserved = "calls-observed"
	// InvariantSteps: a step could not be carried out: a replica did not
	// start, or a wait-until did not hold within its bound.
	InvariantSteps = "plan-steps"
)

func builtinInvariant(name string) bool {
	switch name {
	case InvariantVersions, InvariantNoLostCalls, InvariantAppliedOnce, InvariantBlockedBounded,
		InvariantExternalUninterrupted, InvariantObserved, InvariantSteps, InvariantWatchersConverge:
		return true
	}
	return false
}

// maxViolationsPerInvariant bounds how many violations of one invariant a
// report keeps for each subject (calls, watches, …: the message's first
// word), so a flood of one kind cannot hide another; the rest are counted.
const maxViolationsPerInvariant = 5

// Violation is one broken invariant: which, in which run, during which step,
// and what happened.
type Violation struct {
	// Invariant is the name of the invariant broken: a built-in one
	// (InvariantVersions…), a user [Invariant]'s, or "hook " + a [Hook]'s.
	Invariant string
	// Plan and Seed name the run; LOCKSTEP_SEED=Seed replays a random plan.
	Plan string
	Seed int64
	// Step is the number of the step running when the violation was seen
	// (0 before the first step, len(steps)+1 after the last), and StepText
	// the step as printed.
	Step     int
	StepText string
	// At is the time since the run started.
	At time.Duration
	// Message says what happened, naming calls, replicas and versions.
	Message string
}

// Error prints the violation with everything needed to find and replay it.
func (v Violation) Error() string {
	return fmt.Sprintf("upgradesim: plan %q seed %d, step %d (%s), at %s: invariant %s violated: %s",
		v.Plan, v.Seed, v.Step, v.StepText, v.At.Round(time.Millisecond), v.Invariant, v.Message)
}

// violate records a violation during the current step.
func (c *Cluster) violate(invariant, format string, args ...any) {
	c.violateAt(int(c.step.Load()), invariant, format, args...)
}

// violateAt records a violation attributed to step.
func (c *Cluster) violateAt(step int, invariant, format string, args ...any) {
	c.violateAtTime(step, c.now(), invariant, format, args...)
}

// violateAtTime records a violation attributed to step and seen at time at.
func (c *Cluster) violateAtTime(step int, at time.Duration, invariant, format string, args ...any) {
	v := Violation{
		Invariant: invariant, Plan: c.plan.Name, Seed: c.plan.Seed,
		Step: step, StepText: c.stepText(step), At: at,
		Message: fmt.Sprintf(format, args...),
	}
	subject := invariant
	if words := strings.Fields(v.Message); len(words) > 0 {
		subject += " " + words[0]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.perInvariant[subject] >= maxViolationsPerInvariant {
		c.suppressed[invariant]++
		return
	}
	c.perInvariant[subject]++
	c.violations = append(c.violations, v)
	c.tl.mark(v.At, "violation", invariant)
}

func (c *Cluster) stepText(step int) string {
	switch {
	case step <= 0:
		return "before the first step"
	case step > len(c.plan.Steps):
		return "after the last step"
	}
	return c.plan.Steps[step-1].String()
}
