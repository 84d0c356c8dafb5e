// Package defaults is the golden case for defaults: exposed through Get accessors and never written into decoded values.
package defaults

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
