// Package nodestatus is the golden case for a Kubernetes-style NodeStatus: conditions, quantity maps, addresses, images and nullable fields, beside the benchmark message.
package nodestatus

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
