// Package v2 is the golden case for fork-mode conversions partly written
// by hand: it forks from 1.0.0 (package v1) and restructures its status
// and acknowledgement, so convert.go writes those conversions, calling the
// generated ones for what did not change.
package v2

//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
