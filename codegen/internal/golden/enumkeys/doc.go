// Package enumkeys is the golden case for maps keyed by an enum: a map
// whose propertyNames is (or refers to) an enum of strings is a map of
// that enum type, by a named enum, an inline one, in a named map type and
// nested; the JSON is the same as with string keys.
package enumkeys

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
