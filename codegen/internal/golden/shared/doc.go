// Package shared is the golden case for one Go type per distinct inline
// schema: identical inline schemas share the first one's type, one the
// same as a referenced definition is the definition's type, and schemas
// that differ in anything their Go code is written from (a check, a
// description, a default, x-go-name) keep types of their own.
package shared

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
