// Package alloftypes is the golden case for allOf of types no value has: json.RawMessage, and validation refuses every value.
package alloftypes

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
