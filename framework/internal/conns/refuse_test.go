package conns

import (
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/certs"
)

// tcpPair returns both ends of a TCP connection on 127.0.0.1.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.Close()
		_ = server.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	_ = client.SetDeadline(deadline)
	_ = server.SetDeadline(deadline)
	return client, server
}

// The drain chose a TLS connection whose handshake its serving goroutine
// had not begun, asked it whether it spoke HTTP/2 (not known: no
// handshake), and wrote its HTTP/1 refusal, whose write ran the handshake,
// which could choose h2: the client then read HTTP/1 bytes as HTTP/2
// frames, and a call it sent was served on a connection whose answer
// could not arrive. refuse now does the handshake itself first, and
// leaves a connection that chose h2 to GOAWAY.
func TestRefusalDoesNotGoOnATLSConnectionThatChoseHTTP2(t *testing.T) {
	ca, err := certs.NewCA("refuse-test")
	require.NoError(t, err)
	cert, err := ca.Issue(certs.Spec{Component: "nodecontroller", Server: true})
	require.NoError(t, err)
	rawClient, rawServer := tcpPair(t)
	server := tls.Server(rawServer, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	client := tls.Client(rawClient, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", NextProtos: []string{"h2"}})
	shaken := make(chan error, 1)
	go func() { shaken <- client.Handshake() }()

	tracker := NewTracker(clockwork.NewFakeClock())
	tc := &Conn{conn: server, state: http.StateNew, refusalWritten: make(chan struct{})}
	wrote := tracker.refuse(tc, []byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n"), false)
	require.NoError(t, <-shaken)
	require.Equal(t, "h2", client.ConnectionState().NegotiatedProtocol)
	require.False(t, wrote, "the HTTP/1 refusal was written on a connection that chose h2")
	require.True(t, tc.h2.Load())
	require.Equal(t, connFree, tc.next.Load(), "the connection was claimed for the refusal")
	require.True(t, tc.Serve(&http.Request{ProtoMajor: 2}), "a call on it is served")
}

// Once the HTTP/2 server has read an h2c connection's preface it tells
// the connection Active and then Idle, without a request served between:
// the tracker knows from that that it speaks HTTP/2 before any request
// has come on it, so the drain never writes its HTTP/1 refusal there.
func TestTrackerKnowsAnH2cConnectionByItsStates(t *testing.T) {
	tracker := NewTracker(clockwork.NewFakeClock())
	hs := &http.Server{
		Handler:     http.NotFoundHandler(),
		ConnState:   tracker.Track,
		ConnContext: tracker.ConnContext,
		Protocols:   new(http.Protocols),
	}
	hs.Protocols.SetHTTP1(true)
	hs.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		<-served
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Write([]byte(h2cPreface + "\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")) // the preface and empty SETTINGS
	require.NoError(t, err)
	h2 := func() bool {
		tracker.mu.Lock()
		defer tracker.mu.Unlock()
		for _, tc := range tracker.conns {
			if tc.h2.Load() {
				return true
			}
		}
		return false
	}
	// Every state the tracker is told closes its changed channel.
	known := time.After(10 * time.Second)
	for {
		tracker.mu.Lock()
		changed := tracker.changed
		tracker.mu.Unlock()
		if h2() {
			return
		}
		select {
		case <-changed:
		case <-known:
			t.Fatal("the tracker never learnt that the connection speaks HTTP/2")
		}
	}
}
