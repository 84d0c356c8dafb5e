// Package selectors is the golden case for topic selectors: string, integer
// and boolean selector fields, a field two topics share, and the typed
// Select options generated for them.
package selectors

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
