// Package uncovered is the golden case for keywords generated checks cannot
// check on the Go value they apply to: each message leaves its validation to
// jsonschema/v5, and the model's golden records which keyword, on which Go
// value, and why.
package uncovered

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
