// Package v2_1 is version 2.1.0 of the nodestatus contract. It derives
// from 2.0.0 ([v2]) through a change compatible both ways, a node's kernel
// version, so its generated Contract carries the conversions: its clients
// and servers speak 2.0.0 too, with no fork mode.
package v2_1

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
