// Package v1_1 is the later version of the golden case for a compatible
// version: it derives from 1.0.0 (package v1_0) through changes compatible
// both ways, so its generated Contract carries the conversions, and its
// clients and servers speak 1.0.0 too, with no fork mode.
package v1_1

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
