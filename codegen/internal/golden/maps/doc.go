// Package maps is the golden case for maps: additionalProperties and open objects without declared properties.
package maps

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
