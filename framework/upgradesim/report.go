package upgradesim

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Report is the outcome of one run.
type Report struct {
	// Plan is the plan as it ran (see [Sim.Prepare]).
	Plan Plan
	// Duration is how long the run took, teardown included.
	Duration time.Duration
	// Violations are the invariants broken, at most a few per invariant;
	// Suppressed counts the others by invariant.
	Violations []Violation
	Suppressed map[string]int
	// Calls counts the traffic's calls.
	Calls CallStats
	// Final is every replica's version once the last step was done and
	// clients had settled ("" for a replica that was down).
	Final map[string]string
	// Agreed is, at the same moment, the contract versions each client
	// replica held sessions at, by "client→server" pair.
	Agreed map[string][]string
	// Timeline is the run for people.
	Timeline *Timeline
}

// Failed reports whether any invariant was broken.
func (r *Report) Failed() bool { return len(r.Violations) > 0 }

// Summary prints what a run's outcome is, without timings, so that it is
// the same every time a passing plan runs: the verdict, the final
// versions, and the agreed sessions.
func (r *Report) Summary() string {
	var b strings.Builder
	if !r.Failed() {
		b.WriteString("verdict: ok\n")
	} else {
		seen := map[string]bool{}
		var names []string
		for _, v := range r.Violations {
			if !seen[v.Invariant] {
				seen[v.Invariant] = true
				names = append(names, v.Invariant)
			}
		}
		sort.Strings(names)
		b.WriteString("verdict: violated " + strings.Join(names, ", ") + "\n")
	}
	b.WriteString("final:")
	for _, name := range sortedKeys(r.Final) {
		v := r.Final[name]
		if v == "" {
			v = "down"
		}
		fmt.Fprintf(&b, " %s=%s", name, v)
	}
	b.WriteString("\n")
	for _, p := range sortedKeys(r.Agreed) {
		fmt.Fprintf(&b, "agreed: %s %s\n", p, strings.Join(r.Agreed[p], " + "))
	}
	return b.String()
}

func (c *Cluster) report(final map[string]string, agreed map[string][]string) *Report {
	c.mu.Lock()
	violations := append([]Violation(nil), c.violations...)
	suppressed := map[string]int{}
	for k, v := range c.suppressed {
		suppressed[k] = v
	}
	c.mu.Unlock()
	sort.SliceStable(violations, func(i, j int) bool { return violations[i].At < violations[j].At })
	return &Report{
		Plan: c.plan, Duration: c.now(), Violations: violations, Suppressed: suppressed,
		Calls: c.stats(), Final: final, Agreed: agreed, Timeline: c.tl.timeline(),
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
