//go:build linux

package framework

import "golang.org/x/sys/unix"

// pendingInput returns the bytes waiting in socket fd's receive buffer.
func pendingInput(fd uintptr) int {
	n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}

// queueCountable says acceptQueueLen counts here.
const queueCountable = true

// acceptQueueLen returns how many connections wait in listener l's accept
// queue (TCP_INFO's tcpi_unacked, for a listening socket), 0 where that
// cannot be told.
func acceptQueueLen(l any) int {
	n := 0
	withFD(l, func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = int(info.Unacked)
		}
	})
	return n
}
