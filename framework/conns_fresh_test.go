package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Connections that had not finished a request's headers held a drain.
// Its second phase waited until every open connection had been idle or
// unused for DrainQuiet, so a fresh connection every few milliseconds
// (sending half a request, or nothing) restarted the wait for as long as
// the dials went on: up to Run's limit, which then cut the drain short,
// and the idle connections of honest clients were never given the
// drain's refusal. Over TLS a connection whose handshake had not finished
// held each round of refusals, and every connection's state changes, for
// up to ReadHeaderTimeout. A draining server now waits only for requests
// whose headers have arrived, and closes the connections that never
// carried one once their clients have had conns.RefusalLinger to read its
// refusal. The drain runs on a fake clock: only the test moves it, a step
// after each fresh connection is accepted, so no quiet period passes
// between them however slowly a loaded machine dials.
func TestDrainDoesNotWaitForConnectionsThatSendNoRequest(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		name := "plain"
		if overTLS {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) { testDrainWithFreshConnections(t, overTLS) })
	}
}

func testDrainWithFreshConnections(t *testing.T, overTLS bool) {
	clock := clockwork.NewFakeClock()
	cfg := ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: slog.New(slog.DiscardHandler), Clock: clock,
		DrainTimeout: time.Millisecond, DrainQuiet: 300 * time.Millisecond, ReadHeaderTimeout: time.Minute}
	var clientTLS *tls.Config
	if overTLS {
		ca, err := certs.NewCA("drain-test")
		require.NoError(t, err)
		cert, err := ca.Issue(certs.Spec{Component: "nodecontroller", Server: true})
		require.NoError(t, err)
		cfg.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		clientTLS = &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", NextProtos: []string{"http/1.1"}}
	}
	s, err := NewServer(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		<-served
	})
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	// dial opens a TCP connection, not yet speaking TLS.
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		conns = append(conns, c)
		return c
	}
	accepted := func() uint64 {
		s.mu.RLock()
		ct := s.conns
		s.mu.RUnlock()
		if ct == nil {
			return 0
		}
		return ct.Accepted()
	}

	// An honest client's keep-alive connection, idle when the drain begins.
	honest := dial()
	if overTLS {
		tc := tls.Client(honest, clientTLS)
		require.NoError(t, tc.Handshake())
		honest = tc
	}
	br := bufio.NewReader(honest)
	_, err = io.WriteString(honest, "GET /livez HTTP/1.1\r\nHost: lockstep\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	if overTLS {
		// A connection whose TLS handshake never finishes.
		n := accepted()
		dial()
		require.Eventually(t, func() bool { return accepted() > n }, 10*time.Second, time.Millisecond)
	}

	drained := make(chan error, 1)
	go func() { drained <- s.Shutdown(context.Background()) }()
	refused := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("no refusal on the idle connection: %v", err)
		}
		refused <- resp
	}()

	// A fresh connection every step, each sending half a request (over
	// TLS, half a handshake), while the clock moves: 4 s of it, over ten
	// DrainQuiets.
	var answer *http.Response
	for step := 0; step < 400 && answer == nil; step++ {
		n := accepted()
		fresh := dial()
		half := "GET /livez HTTP/1.1\r\nHo"
		if overTLS {
			half = "\x16\x03\x01\x00" // half a ClientHello's record header
		}
		_, err := io.WriteString(fresh, half)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return accepted() > n }, 10*time.Second, time.Millisecond, "step %d", step)
		clock.Advance(10 * time.Millisecond)
		select {
		case answer = <-refused:
		case <-time.After(time.Millisecond):
		}
	}
	require.NotNil(t, answer, "the drain never answered the idle connection while fresh connections came")
	answer.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, answer.StatusCode)
	require.Equal(t, "1", answer.Header.Get(protocol.HeaderNotProcessed))
	require.NoError(t, honest.Close())

	// The dials stop, and their connections stay open: the drain ends
	// once the clock has moved past its waits, closing them (http.Server's
	// Shutdown would wait until they were five seconds old, in real time).
	for range 10000 {
		clock.Advance(10 * time.Millisecond)
		select {
		case err := <-drained:
			require.NoError(t, err)
			return
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatal("the drain did not end")
}
