// Package v1 is version 1.0.0 of the nodestatus contract: the kubelet of
// each node reports its status to the node controller, with conditions as a
// list and resources as Kubernetes quantity strings ("3500m", "16Gi").
package v1

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
