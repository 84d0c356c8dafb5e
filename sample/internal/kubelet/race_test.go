//go:build race

package kubelet_test

// raceEnabled: the race detector slows every TLS handshake and call
// several-fold, so the scale tests run fewer nodes under it.
const raceEnabled = true
