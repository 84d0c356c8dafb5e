// Package caseinsensitive is the golden case for case-insensitive member names, for peers such as the Kubernetes scheduler extender that send Go field names.
package caseinsensitive

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
