package framework_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attack 8: at a small descriptor limit the reserve of connections, kept
// for sources that hold few, admitted a source holding one: two attacking
// hosts left a kubelet one connection of 160. A source holding little may
// now hold a quarter of the reserve (up to 16): at a limit of 256
// descriptors (MaxConns 192), the kubelet on a third address is served 12
// connections while the two attacking hosts hold all they may.
func TestContainTheConnectionReserveIsRealAtSmallLimits(t *testing.T) {
	const maxConns = 192 // three quarters of 256 descriptors; a source's share 96, the reserve 48
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		Limits: framework.Limits{MaxConns: maxConns}}, nil)
	hold := func(from string) bool {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", srv.Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return false
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false // closed unread
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	served := func(from string, n int) int {
		ok := 0
		for range n {
			if hold(from) {
				ok++
			}
		}
		return ok
	}
	assert.Equal(t, maxConns/2, served("127.0.0.2", 120), "the first attacking host holds its share")
	assert.Equal(t, maxConns/4, served("127.0.0.3", 120), "the second up to three quarters")
	assert.Equal(t, maxConns/4/4, served("127.0.0.4", 160), "the kubelet holds a quarter of the reserve, not one connection")
	assert.Equal(t, maxConns/4/4, served("127.0.0.5", 160), "and so does the next")
}
