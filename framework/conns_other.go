//go:build !linux

package framework

// pendingInput cannot tell here; the drain relies on idle time alone.
func pendingInput(uintptr) int { return 0 }

// peekInput cannot tell here.
func peekInput(uintptr, []byte) int { return 0 }

// queueCountable says acceptQueueLen cannot count here: a stopping
// listener takes one timed-out Accept for an empty queue.
const queueCountable = false

func acceptQueueLen(any) int { return 0 }

// openFileLimit cannot tell here: Limits.MaxConns keeps its default.
func openFileLimit() int { return 0 }
