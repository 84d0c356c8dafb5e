// Package v2 is version 2.0.0 of the nodestatus contract. It breaks 1.0.0:
// conditions are an object with one member per condition, and resources
// are typed integers. The conversions to and from [v1] in convert.go let a
// node controller or kubelet in fork mode keep speaking 1.0.0.
package v2

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
