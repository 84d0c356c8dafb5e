// Package nullmessages is the golden case for messages whose schema admits null: a nullable enum, object, string and reference, and a message that admits only null. Each is a union, which holds null.
package nullmessages

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
