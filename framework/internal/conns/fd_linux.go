//go:build linux

package conns

import "golang.org/x/sys/unix"

// pendingInput returns the bytes waiting in socket fd's receive buffer.
func pendingInput(fd uintptr) int {
	n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}

// peekInput copies into p, without taking them, the first bytes waiting
// in socket fd's receive buffer, and returns how many.
func peekInput(fd uintptr, p []byte) int {
	n, _, err := unix.Recvfrom(int(fd), p, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// queueCountable says AcceptQueueLen counts here.
const queueCountable = true

// AcceptQueueLen returns how many connections wait in listener l's accept
// queue (TCP_INFO's tcpi_unacked, for a listening socket), 0 where that
// cannot be told.
func AcceptQueueLen(l any) int {
	n := 0
	withFD(l, func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = int(info.Unacked)
		}
	})
	return n
}

// OpenFileLimit returns how many file descriptors the process may hold
// (RLIMIT_NOFILE's soft limit, which the Go runtime raises to the hard
// limit at start), 0 where there is no limit to speak of.
func OpenFileLimit() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
