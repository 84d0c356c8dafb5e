// Package v2 is version 2.0.0 of the extender contract. It breaks the
// Kubernetes extender protocol of [v1]: typed pods, nodes by name, typed
// failure reasons, normalised float scores, and coded binding errors. The
// conversions in convert.go let a scheduler or extender in fork mode keep
// speaking 1.0.0, also with plain Kubernetes extenders that never
// handshake.
package v2

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
