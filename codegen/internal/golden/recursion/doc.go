// Package recursion is the golden case for recursive schemas: a tree through #, a list through a nullable member, and two types that refer to each other.
package recursion

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
