package limits

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// addrConn is a connection that only knows its remote address.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// An IPv6 host holds a /64: counted per address, it could open one
// connection from each of as many addresses as it liked and take every
// connection the per-source bound keeps for others.
func TestConnSourceIsAnIPv4AddressOrAnIPv6Slash64(t *testing.T) {
	source := func(addr string) string {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return connSource(addrConn{remote: a})
	}
	assert.Equal(t, "127.0.0.1", source("127.0.0.1:4000"))
	assert.Equal(t, "10.0.0.7", source("[::ffff:10.0.0.7]:4000"), "an IPv4-mapped address is its IPv4 address")
	assert.NotEqual(t, source("10.0.0.7:1"), source("10.0.0.8:1"))
	assert.Equal(t, "2001:db8:1:2::/64", source("[2001:db8:1:2::1]:4000"))
	assert.Equal(t, source("[2001:db8:1:2::1]:4000"), source("[2001:db8:1:2:ffff:ffff:ffff:ffff]:5000"), "one /64, one source")
	assert.NotEqual(t, source("[2001:db8:1:2::1]:4000"), source("[2001:db8:1:3::1]:4000"))
	assert.Equal(t, "::/64", source("[::1]:4000"))
}
