// Package nestedobjects is the golden case for objects inside objects: inline objects become named structs, open objects keep undeclared members.
package nestedobjects

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
