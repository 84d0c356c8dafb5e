// Package v1 is version 1.0.0 of the extender contract: the Kubernetes
// scheduler extender protocol (k8s.io/kube-scheduler/extender/v1) on the
// wire, with Go field names as members, case-insensitive decoding, and the
// paths /filter, /prioritize and /bind under a scheduler's urlPrefix. The
// Pod and Node objects are kept as raw JSON; package kube in this sample
// reads the few members the extender needs.
package v1

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
