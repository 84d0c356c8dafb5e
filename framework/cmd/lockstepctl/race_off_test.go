//go:build !race

package main

// raceEnabled says the race detector is on: it multiplies memory several
// times, which the memory bounds of the hostile tests allow for.
const raceEnabled = false
