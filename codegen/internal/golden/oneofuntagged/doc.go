// Package oneofuntagged is the golden case for oneOf and anyOf without a discriminator: raw-backed unions with typed accessors, a nullable reference, and null admitted through a reference or beside the branches.
package oneofuntagged

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
