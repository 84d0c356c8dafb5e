// Package ecmapatterns is the golden case for patterns only an ECMA-262
// engine runs (lookahead here), in pattern and in patternProperties, beside
// one RE2 runs: the generated checks run each on its engine.
package ecmapatterns

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
