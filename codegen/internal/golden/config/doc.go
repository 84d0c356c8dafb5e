// Package config is the golden case for a configuration-file schema in draft-07, shaped like a compose file: combinators, pattern properties, extension members and if/then.
package config

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
