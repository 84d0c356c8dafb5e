// Package v1 is the earlier version of the golden case for fork-mode
// conversions partly written by hand: 2.0.0 (package v2) restructures it.
package v1

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
