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
