// Package booleanschemas is the golden case for boolean schemas: true and false as properties, items, additionalProperties and whole messages.
package booleanschemas

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
