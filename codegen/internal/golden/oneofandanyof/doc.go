// Package oneofandanyof is the golden case for oneOf beside anyOf, and allOf of several anyOf: json.RawMessage, validated by jsonschema/v5.
package oneofandanyof

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
