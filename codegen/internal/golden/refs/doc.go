// Package refs is the golden case for $ref across files (JSON, YAML, draft-07), into $defs and definitions, to nested JSON pointers, to anchors and to other messages.
package refs

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
