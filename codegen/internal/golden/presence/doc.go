// Package presence is the golden case for optional, required and nullable members: absent, null and zero kept apart.
package presence

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
