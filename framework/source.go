package framework

import "context"

// EndpointSource tells a client where its peer's replicas are. Run reports
// the full set of endpoint base URLs through update, first as soon as it
// knows them and again whenever the set changes, until ctx ends. The static
// source is [StaticEndpoints]; DNS sources live in framework/discovery.
//
// A URL that a report adds is handshaken at once. A URL reported again
// changes nothing: a source that also knows when a replica comes back
// (a restarted pod turning ready) says so as a [ReadinessSource].
type EndpointSource interface {
	Run(ctx context.Context, update func(urls []string))
}

// ReadinessSource is an [EndpointSource] that also knows whether each
// replica is ready, as a Kubernetes EndpointSlice's ready condition says.
// The client runs RunReadiness instead of Run; update gets every endpoint
// the source knows, ready or not.
//
// Readiness does not decide routing: a lockstep server is unready until
// its own peers have handshaken it, so an endpoint that is not ready is
// still handshaken and called as any other (docs/discovery.md). What it
// decides is the reconnect: a report that turns a known endpoint ready
// again is taken as the announcement that its server listens again. The
// process's prober of its address ([ProbeStats]) dials it at once instead
// of at its next planned dial, one dial however many clients of the
// process were told, and wakes every endpoint and blocked call waiting for
// it when that dial connects.
type ReadinessSource interface {
	EndpointSource
	RunReadiness(ctx context.Context, update func(endpoints []EndpointReport))
}

// EndpointReport is one endpoint as a [ReadinessSource] reports it.
type EndpointReport struct {
	// URL is the endpoint's base URL, as [EndpointSource] reports it.
	URL string
	// NotReady says the replica is known but not ready: its pod is
	// starting or restarting, its readiness probe fails. The zero value is
	// ready, as every URL of a plain [EndpointSource] is.
	NotReady bool
}

// StaticEndpoints is a fixed list of endpoint base URLs, such as
// "https://10.0.0.7:8443".
type StaticEndpoints []string

// Run reports the list once and waits for ctx to end.
func (s StaticEndpoints) Run(ctx context.Context, update func([]string)) {
	update(append([]string(nil), s...))
	<-ctx.Done()
}
