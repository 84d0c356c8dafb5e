// Package patternprops is the golden case for patternProperties: as maps, beside declared properties, and as extension members of an open object.
package patternprops

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
