//go:build !linux

package conns

// pendingInput cannot tell here; the drain relies on idle time alone.
func pendingInput(uintptr) int { return 0 }

// peekInput cannot tell here.
func peekInput(uintptr, []byte) int { return 0 }

// queueCountable says AcceptQueueLen cannot count here: a stopping
// listener takes one timed-out Accept for an empty queue.
const queueCountable = false

// AcceptQueueLen cannot count here.
func AcceptQueueLen(any) int { return 0 }

// OpenFileLimit cannot tell here: Limits.MaxConns keeps its default.
func OpenFileLimit() int { return 0 }
