//go:build !linux

package framework

// pendingInput cannot tell here; the drain relies on idle time alone.
func pendingInput(uintptr) int { return 0 }
