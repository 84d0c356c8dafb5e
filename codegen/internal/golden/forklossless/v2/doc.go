// Package v2 is the golden case for fork-mode conversions generated in
// full: it forks from 1.0.0 (package v1), which describes the same JSON
// with other Go names, so every conversion is the identity.
package v2

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
