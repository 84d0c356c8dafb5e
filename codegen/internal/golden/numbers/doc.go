// Package numbers is the golden case for numeric checks on float64 values
// (multipleOf with a fractional step, integer type checks on numbers) and
// for members that an object keyword names but only its map of other
// members can hold.
package numbers

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
