// Package metrics is lockstep's Prometheus instrumentation of a process:
// the counters and histograms events update (handshakes, calls, blocked
// time, session lapses, limit refusals, idempotency evictions, entries on
// behalf of a component) and the gauges read at scrape time from the
// servers and clients it watches (sessions, topics, watchers, endpoints,
// blocked calls). It is separate from the runtime because it only counts:
// it reads a server or a client through the few functions they give it
// ([Server], [Client]) and never holds their state. framework.Metrics
// wraps it, and stays a server's default, which a package importing
// framework could not be (docs/design.md).
package metrics
