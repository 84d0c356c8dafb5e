package framework_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
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

// A certificate used from many addresses was bounded only by MaxConns,
// since connections were counted by source alone, before TLS. A
// connection is now charged to its identity too, from its first request
// with a verified certificate: one kubelet certificate dialling from
// four addresses holds its share of connections (Limits.ConnsPerPeer),
// the rest answered resource_exhausted (conns_per_peer) and closed, and a
// legitimate kubelet on a fifth address is served every connection it
// opens. Closing connections gives the identity's share back.
func TestContainConnectionsAreChargedToTheirIdentity(t *testing.T) {
	const maxConns, perPeer = 64, 12 // a source's share 32: the sources alone would admit every attempt
	a := startContainServer(t, framework.Limits{MaxConns: maxConns, ConnsPerPeer: perPeer})
	before := refusals(t, a.Server, "conns_per_peer")
	evil := a.tlsConfig(t, certs.Spec{Component: "kubelet", Name: "evil"})
	good := a.tlsConfig(t, certs.Spec{Component: "kubelet", Name: "good-node"})

	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			_ = c.Close()
		}
	})
	// open dials from src and asks for /healthz on a new connection; it
	// returns the connection (nil once the server closed it) and the
	// answer's status and code.
	open := func(cfg *tls.Config, src string) (net.Conn, int, string) {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", a.Addr, cfg)
		require.NoError(t, err)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		var e struct{ Code string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, err := br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "a refused connection is closed after its answer")
			_ = c.Close()
			return nil, resp.StatusCode, e.Code
		}
		_ = c.SetDeadline(time.Time{})
		return c, resp.StatusCode, ""
	}
	served, refused := 0, 0
	for i := range 4 * perPeer / 2 {
		c, code, v := open(evil, fmt.Sprintf("127.0.0.%d", 2+i%4))
		if c != nil {
			served++
			held = append(held, c)
			continue
		}
		refused++
		assert.Equal(t, http.StatusTooManyRequests, code)
		assert.Equal(t, string(framework.CodeResourceExhausted), v)
	}
	assert.Equal(t, perPeer, served, "one certificate holds its share over every address it dials from")
	assert.Equal(t, perPeer, refused)
	assert.Equal(t, float64(perPeer), refusals(t, a.Server, "conns_per_peer")-before)

	for range perPeer {
		c, code, v := open(good, "127.0.0.9")
		require.NotNil(t, c, "the legitimate kubelet is served: %d %s", code, v)
		held = append(held, c)
	}

	// The attacker's connections closed, its share is free again.
	for _, c := range held[:perPeer] {
		_ = c.Close()
	}
	held = held[perPeer:]
	require.Eventually(t, func() bool {
		c, _, _ := open(evil, "127.0.0.6")
		if c != nil {
			held = append(held, c)
		}
		return c != nil
	}, 10*time.Second, 20*time.Millisecond, "a closed connection gives its identity's charge back")
}

// The same over HTTP/2, where a connection carries many streams: a
// connection over the identity's share is answered resource_exhausted at
// its first stream and closed with a GOAWAY, and the share counts
// connections, not streams.
func TestContainHTTP2ConnectionsAreChargedToTheirIdentity(t *testing.T) {
	const perPeer = 4
	a := startContainServer(t, framework.Limits{MaxConns: 64, ConnsPerPeer: perPeer})
	before := refusals(t, a.Server, "conns_per_peer")
	evil := a.tlsConfig(t, certs.Spec{Component: "kubelet", Name: "evil"})
	// get asks /healthz from src on a transport of its own (one HTTP/2
	// connection), streams times at once, and returns the statuses.
	get := func(src string, streams int) map[int]int {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
		tr := &http.Transport{TLSClientConfig: evil.Clone(), ForceAttemptHTTP2: true, DialContext: d.DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		out := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := hc.Get(a.URL + "/healthz")
				if !assert.NoError(t, err) {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, 2, resp.ProtoMajor)
				mu.Lock()
				out[resp.StatusCode]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		return out
	}
	for i := range perPeer {
		// Many streams on one connection are one connection.
		assert.Equal(t, map[int]int{http.StatusOK: 8}, get(fmt.Sprintf("127.0.0.%d", 2+i), 8))
	}
	over := get("127.0.0.7", 1)
	assert.Equal(t, map[int]int{http.StatusTooManyRequests: 1}, over, "a connection over the share is refused")
	assert.Equal(t, 1.0, refusals(t, a.Server, "conns_per_peer")-before)
}
