// Package v1_0 is the earlier version of the golden case for a compatible
// version: 1.1.0 (package v1_1) adds optional members and a method, and the
// generator forks it for free.
package v1_0

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
