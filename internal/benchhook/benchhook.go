// Package benchhook reaches the options of package framework that only
// its benchmarks and the comparison programs under bench/ use, so that
// they stay out of the public API. Package framework fills the variables
// in at init; they are typed any because this package cannot import the
// framework, which imports it (the pattern grpc-go's internal package
// uses for its test-only hooks).
package benchhook

// OwnStream returns a framework.WatchOption that makes an informer open a
// watch stream of its own rather than share its client's feed of the topic
// and selection: the server then sends it every change on a connection of
// its own, as before feeds, at the cost of a stream per informer. It is for
// comparing the two.
var OwnStream func() any
