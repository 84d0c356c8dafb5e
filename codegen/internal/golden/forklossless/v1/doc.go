// Package v1 is the earlier version of the golden case for fork-mode
// conversions generated in full: 1.1.0 (package v2) describes the same JSON.
package v1

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
