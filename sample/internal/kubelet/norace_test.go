//go:build !race

package kubelet_test

// raceEnabled: see race_test.go.
const raceEnabled = false
