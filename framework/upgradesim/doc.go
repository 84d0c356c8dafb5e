// Package upgradesim runs upgrade tests of lockstep components inside an
// ordinary go test: it starts the components in process, on real loopback
// listeners, drives traffic between them, moves them through a plan of
// upgrades, rollbacks, restarts, kills and network faults, and checks
// invariants during and after the run.
//
// A test declares the system once in a [Config]: each [Component] with
// every [Version] it can run and how to start it (Start receives an [Env]
// whose ServerConfig and ClientConfig wire the kit's interceptors and
// fault-injecting transport into the framework), and the [Traffic] between
// them. A [Plan] is explicit steps ([Start], [Upgrade], [Rollback],
// [Restart], [Kill], [Partition], [Slow], [Drop], [Heal], [Wait],
// [WaitUntil]) or a random plan generated from a seed by
// [Sim.RandomPlan], a pure function of the seed that LOCKSTEP_SEED
// replays. [Sim.Run] prints the plan, runs it, logs a timeline and fails
// the test with one message per broken invariant, naming the seed, the
// step and the invariant.
//
// The built-in invariants are: no call processed at a version its client
// or its server does not speak ([InvariantVersions]); every acknowledged
// call applied ([InvariantNoLostCalls]) and none applied twice
// ([InvariantAppliedOnce]), counted where handlers call [Env.Apply]; no
// client blocked for longer than a bound while a compatible server is
// available ([InvariantBlockedBounded]); and no failed call for external
// peers ([InvariantExternalUninterrupted]), the promise of fork mode.
// Users add their own [Invariant]s and [Hook]s.
//
// What it leaves to the user: the components themselves, the declaration
// of which contract versions each version speaks (the specification the
// run is held to), and the conditions under which a call counts as
// applied. Watchers of topics converge through an [Invariant] with an
// After check comparing what a watcher sees with what its writer wrote.
package upgradesim
