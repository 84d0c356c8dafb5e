package upgradesim

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// Stage is a point of an upgrade at which the user's hooks run.
type Stage string

// The stages hooks run at, as roachtest's mixed-version framework has them.
const (
	// StageStartup is once every replica has started, before any upgrade.
	StageStartup Stage = "startup"
	// StageMixedVersion is while replicas run different versions.
	StageMixedVersion Stage = "mixed-version"
	// StageAfterUpgrade is once every component that is not external runs
	// its newest version.
	StageAfterUpgrade Stage = "after-upgrade"
)

func (s Stage) valid() bool {
	return s == StageStartup || s == StageMixedVersion || s == StageAfterUpgrade
}

// Hook is user code run at a stage of the upgrade: seed data on startup,
// exercise a feature in mixed version, check a migration after the upgrade.
// A hook that returns an error is reported as a violation of the
// invariant named after the hook.
type Hook struct {
	// Name names the hook in plans and reports.
	Name string
	// Stage is when the hook runs.
	Stage Stage
	// Run does the work; ctx ends when the run is abandoned.
	Run func(ctx context.Context, c *Cluster) error
}

// Invariant is a user check. During runs at every sample while the plan
// runs (it must be quick and must not block); After runs once the last step
// is done, while every replica still runs, and is retried until it passes
// or [Config.SettleBound] ends. Either may be nil. An error is a
// violation, reported with the seed and the step.
type Invariant struct {
	// Name names the invariant in reports.
	Name string
	// During checks the running cluster at every sample.
	During func(c *Cluster) error
	// After checks the cluster once the plan is done.
	After func(ctx context.Context, c *Cluster) error
}

// Condition is what a wait-until step waits for: Holds returns nil when it
// holds, or an error saying why it does not yet.
type Condition struct {
	// Name names the condition in printed plans: "connected".
	Name string
	// Holds tests the condition.
	Holds func(c *Cluster) error
}

// Connected holds when every client that has a compatible server
// available (running, not partitioned from it, speaking a version in
// common) holds a session with one of them. See [Cluster.Connected].
var Connected = Condition{Name: "connected", Holds: func(c *Cluster) error { return c.Connected() }}

// CallsAcknowledged holds once n calls were acknowledged since the step
// began.
func CallsAcknowledged(n int) Condition {
	return Condition{Name: fmt.Sprintf("%d calls acknowledged", n), Holds: func(c *Cluster) error {
		if got := c.stepAcknowledged(); got < n {
			return fmt.Errorf("%d of %d calls acknowledged", got, n)
		}
		return nil
	}}
}

var reCallsAcknowledged = regexp.MustCompile(`^(\d+) calls acknowledged$`)

// parseCondition resolves the built-in conditions by name; any other name
// is left for [Config.Conditions] to resolve when the plan runs.
func parseCondition(name string) Condition {
	if name == Connected.Name {
		return Connected
	}
	if m := reCallsAcknowledged.FindStringSubmatch(name); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return CallsAcknowledged(n)
		}
	}
	return Condition{Name: name}
}
