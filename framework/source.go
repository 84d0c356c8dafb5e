package framework

import "context"

// EndpointSource tells a client where its peer's replicas are. Run reports
// the full set of endpoint base URLs through update, first as soon as it
// knows them and again whenever the set changes, until ctx ends. The static
// source is [StaticEndpoints]; DNS sources live in framework/discovery.
type EndpointSource interface {
	Run(ctx context.Context, update func(urls []string))
}

// StaticEndpoints is a fixed list of endpoint base URLs, such as
// "https://10.0.0.7:8443".
type StaticEndpoints []string

// Run reports the list once and waits for ctx to end.
func (s StaticEndpoints) Run(ctx context.Context, update func([]string)) {
	update(append([]string(nil), s...))
	<-ctx.Done()
}
