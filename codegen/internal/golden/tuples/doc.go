// Package tuples is the golden case for tuples: prefixItems with and without further items, optional trailing elements, and draft-07 array items.
package tuples

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
