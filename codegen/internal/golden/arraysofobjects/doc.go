// Package arraysofobjects is the golden case for arrays: of inline objects, of referenced objects, of arrays, with null items, and without items.
package arraysofobjects

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
