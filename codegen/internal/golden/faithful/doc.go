// Package faithful is the golden case for the closest faithful types: defaults of unions, defaults their enum refuses, enum values of another type, schemas that state no type.
package faithful

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
