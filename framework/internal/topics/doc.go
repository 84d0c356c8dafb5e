// Package topics is the server side of lockstep's topics (docs/topics.md):
// each topic's store of objects with their writers and ownership, its
// history of deletes and resume points, the selection index that routes a
// change only to the watchers it concerns, the watch streams that deliver
// the latest state of each key at every watcher's own pace, client writes,
// the counters the status page shows, and the server's table of its topics
// with the forks that wait for a writer.
//
// It is separate from the root framework package because it has its own
// state and rules (four locks, a fan-out goroutine per busy topic, one per
// sending stream) that the rest of the server only starts, feeds and
// stops. What it needs from the server (who a session's peer is, whether a
// writer's session lives, the server's limits on watchers, its clock,
// metrics and goroutine group) it declares in [Host] and [Session]; the
// root framework package wires them, and keeps the public API (ServeTopic,
// TopicWriter, TopicView, the options) as thin wrappers.
package topics
