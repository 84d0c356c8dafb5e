// Package typearrays is the golden case for type arrays: a type with null, several types, and several types with null.
package typearrays

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
