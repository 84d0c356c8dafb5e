// Package enums is the golden case for enums: strings, integers, nullable enums, awkward values, and a shared enum.
package enums

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
