// Package escapehatch is the golden case for the escape hatch: x-go-type for standard and external types, raw JSON, and x-go-name.
package escapehatch

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
