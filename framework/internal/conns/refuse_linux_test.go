package conns

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A client of HTTP/2 without TLS by prior knowledge (h2c) begins with the
// preface; the drain's HTTP/1 refusal written on such a connection broke
// it. A preface waiting in the socket makes the drain leave the
// connection to GOAWAY; an HTTP/1 request waiting there is refused.
func TestRefusalDoesNotGoOnAnH2cConnection(t *testing.T) {
	refusal := []byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n")
	for _, c := range []struct {
		name, sent string
		refused    bool
	}{
		{"h2c", h2cPreface + "\r\n\r\nSM\r\n\r\n", false},
		{"http1", "POST /v1/calls HTTP/1.1\r\nHost: x\r\n\r\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, server := tcpPair(t)
			_, err := client.Write([]byte(c.sent))
			require.NoError(t, err)
			waitUnread(t, server, len(c.sent))
			tracker := NewTracker(clockwork.NewFakeClock())
			tc := &Conn{conn: server, state: http.StateNew, refusalWritten: make(chan struct{})}
			require.Equal(t, c.refused, tracker.refuse(tc, refusal, false))
			require.Equal(t, !c.refused, tc.h2.Load())
		})
	}
}

// waitUnread waits until n bytes wait unread in c's socket, woken by
// poll(2) as they arrive.
func waitUnread(t *testing.T, c net.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for unreadBytes(c) < n {
		left := time.Until(deadline)
		require.Positive(t, left, "the bytes written never arrived")
		withFD(c, func(fd uintptr) {
			_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left.Milliseconds()))
		})
	}
}
