// Package v2 is version 2.0.0 of the nodehealth contract. It breaks 1.0.0:
// readiness is a three-valued state and resources are typed integers.
// convert.go converts to and from [v1], so a node controller in fork mode
// publishes both forms of each change.
package v2

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
