// Package oneoftagged is the golden case for oneOf with a discriminator: variants told apart by a constant member, referenced or inline, with shared base properties, and variants with a tag that are not all objects (an untagged union).
package oneoftagged

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
