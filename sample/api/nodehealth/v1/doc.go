// Package v1 is version 1.0.0 of the nodehealth contract: the NodeHealth
// topic the node controller writes and the scheduler watches, with
// readiness as a boolean and resources as quantity strings.
package v1

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
