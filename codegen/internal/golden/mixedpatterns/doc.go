// Package mixedpatterns is the golden case for patternProperties and additionalProperties of different types: undeclared members held as json.RawMessage.
package mixedpatterns

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
