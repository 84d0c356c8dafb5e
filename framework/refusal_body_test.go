package framework_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// unreadBodyBytes is more than the server's read buffer takes with the
// head, so a refusal that does not read the body leaves bytes in its socket.
const unreadBodyBytes = 100_000

// refusedRequest is a request the server refuses before it reads the body,
// and the code it must answer with.
type refusedRequest struct {
	name   string
	method string
	path   string
	header map[string]string
	code   framework.Code
}

// rawHead is a request head declaring a body of n bytes.
func rawHead(rq refusedRequest, n int, close bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", rq.method, rq.path, n)
	if close {
		b.WriteString("Connection: close\r\n")
	}
	for k, v := range rq.header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	return b.String()
}

// sendWhole writes head and a body of n bytes on conn from a goroutine (a
// server that does not read would block the write), and returns a function
// that waits for the write to end.
func sendWhole(conn net.Conn, head string, n int) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = conn.Write(append([]byte(head), bytes.Repeat([]byte{'x'}, n)...))
	}()
	return func() { <-done }
}

// requireCoded requires an answer with code's status and code.
func requireCoded(t *testing.T, resp *http.Response, code framework.Code) {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, code.HTTPStatus(), resp.StatusCode, string(body))
	var e struct{ Code string }
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	assert.Equal(t, string(code), e.Code)
}

// readCoded reads the next answer on br and requires code's.
func readCoded(t *testing.T, br *bufio.Reader, code framework.Code) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	requireCoded(t, resp, code)
	resp.Body.Close()
	return resp
}

// requireFIN requires that nothing more comes on br and that the
// connection ends with the server's FIN, not a reset.
func requireFIN(t *testing.T, br *bufio.Reader) {
	t.Helper()
	rest, err := io.ReadAll(br)
	require.NoError(t, err, "the connection must end with the server's FIN, not a reset")
	assert.Empty(t, rest)
}

// requireRefusalThenFIN sends rq with a body of unreadBodyBytes and
// Connection: close, and requires the coded refusal followed by the
// server's FIN, not a reset.
func requireRefusalThenFIN(t *testing.T, addr string, rq refusedRequest) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	wait := sendWhole(conn, rawHead(rq, unreadBodyBytes, true), unreadBodyBytes)
	defer func() { conn.Close(); wait() }()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	br := bufio.NewReader(conn)
	readCoded(t, br, rq.code)
	requireFIN(t, br)
}

// requireRefusalOnKeptConnection sends rq with a body of unreadBodyBytes on
// conn, a keep-alive connection, and requires the coded refusal; then the
// connection either ends with a FIN (the answer said Connection: close) or
// serves the next request: the body was not taken for one.
func requireRefusalOnKeptConnection(t *testing.T, conn net.Conn, br *bufio.Reader, rq refusedRequest) {
	t.Helper()
	wait := sendWhole(conn, rawHead(rq, unreadBodyBytes, false), unreadBodyBytes)
	defer wait()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	if resp := readCoded(t, br, rq.code); !resp.Close {
		_, err := io.WriteString(conn, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err = http.ReadResponse(br, nil)
		require.NoError(t, err, "the connection serves its next request")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		return
	}
	requireFIN(t, br)
}

// Every refusal made before the body is read ends, for a peer whose body
// is larger than the server's read buffer, with the coded refusal and a
// FIN: the server reads the rest of the body (within its limits) before it
// closes, since a socket closed with bytes unread is reset, and the reset
// can reach the peer before the refusal does. (A malformed timeout is
// refused after the body is read, which this also holds to.)
func TestRefusalsBeforeTheBodyEndWithoutAReset(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	addr := strings.TrimPrefix(srv.URL, "http://")
	token := handshakeRaw(t, srv.URL, benchContract(t, "1.0.0")).session
	// Closed before the server drains, which would wait for it to lapse.
	t.Cleanup(func() { closeRawSession(srv.URL, token) })
	call := protocol.CallPath("bench", "1.0.0", "ReportStatus")
	session := map[string]string{protocol.HeaderSession: token}
	for _, rq := range []refusedRequest{
		{"stale session", http.MethodPost, call, map[string]string{protocol.HeaderSession: "stale"}, framework.CodeHandshakeRequired},
		{"no session", http.MethodPost, call, nil, framework.CodeHandshakeRequired},
		{"version not served", http.MethodPost, protocol.CallPath("bench", "9.0.0", "ReportStatus"), session, framework.CodeIncompatiblePeer},
		{"unknown method", http.MethodPost, protocol.CallPath("bench", "1.0.0", "Nope"), session, framework.CodeNotFound},
		{"unknown contract", http.MethodPost, protocol.CallPath("nope", "1.0.0", "ReportStatus"), session, framework.CodeNotFound},
		{"unknown path", http.MethodPost, "/nope", nil, framework.CodeNotFound},
		{"wrong HTTP method", http.MethodPut, protocol.PathHandshake, nil, framework.CodeNotFound},
		{"malformed timeout", http.MethodPost, call, map[string]string{protocol.HeaderSession: token, protocol.HeaderTimeout: "soon"}, framework.CodeInvalidArgument},
	} {
		t.Run(rq.name, func(t *testing.T) {
			requireRefusalThenFIN(t, addr, rq)
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			requireRefusalOnKeptConnection(t, conn, bufio.NewReader(conn), rq)
		})
	}
	assert.Zero(t, srv.entered.Load(), "no refused call reached the handler")
}

// A refusal by the Authorizer, and of a write to a topic the server writes,
// end the same way.
func TestAuthorizationRefusalsEndWithoutAReset(t *testing.T) {
	ts := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{cfg: func(c *framework.ServerConfig) {
		c.Authorizer = framework.AuthorizerFunc(func(_ context.Context, e *framework.Entry) error {
			if e.Kind == framework.EntryTopicWrite && e.Topic == topicmsg.TopicLease {
				return framework.Errorf(framework.CodePermissionDenied, "no leases for %s", e.Peer.Identity)
			}
			return nil
		})
	}})
	addr := strings.TrimPrefix(ts.URL, "http://")
	c := topicContract(t, "1.0.0")
	hello, err := json.Marshal(handshake.Hello{Contract: c.Name(), Component: c.Client(), Instance: "raw-1", Release: "1.31.0",
		Offers: []handshake.Offer{c.Offer()}})
	require.NoError(t, err)
	a := do(t, http.MethodPost, ts.URL+protocol.PathHandshake, nil, hello)
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	var w handshake.Welcome
	require.NoError(t, json.Unmarshal(a.body, &w))
	t.Cleanup(func() { closeRawSession(ts.URL, w.Session) })
	session := map[string]string{protocol.HeaderSession: w.Session}
	topicPath := func(topic string) string {
		return protocol.PathPrefix + c.Name() + "/" + c.Version() + "/topics/" + topic
	}
	for _, rq := range []refusedRequest{
		{"authorizer", http.MethodPost, topicPath(topicmsg.TopicLease), session, framework.CodePermissionDenied},
		{"topic the server writes", http.MethodPost, topicPath(topicmsg.TopicNodeHealth), session, framework.CodePermissionDenied},
	} {
		t.Run(rq.name, func(t *testing.T) {
			requireRefusalThenFIN(t, addr, rq)
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			requireRefusalOnKeptConnection(t, conn, bufio.NewReader(conn), rq)
		})
	}
}

// A draining server's refusal carries Connection: close for every peer, so
// it ends the same way for keep-alive peers too.
func TestDrainingRefusalEndsWithoutAReset(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.DrainTimeout, c.DrainQuiet = time.Millisecond, time.Minute
	})
	addr := strings.TrimPrefix(srv.URL, "http://")
	token := handshakeRaw(t, srv.URL, benchContract(t, "1.0.0")).session
	http.DefaultClient.CloseIdleConnections() // the handshake's
	rq := refusedRequest{"draining", http.MethodPost, protocol.CallPath("bench", "1.0.0", "ReportStatus"),
		map[string]string{protocol.HeaderSession: token}, framework.CodeUnavailable}
	// Connections that carried a request before the drain keep serving
	// until they are quiet; each refusal closes one.
	var kept [2]net.Conn
	var readers [2]*bufio.Reader
	for i := range kept {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		readers[i] = bufio.NewReader(conn)
		resp, err := http.ReadResponse(readers[i], nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		kept[i] = conn
	}
	drained := srv.startDrain(t, 10*time.Second)
	http.DefaultClient.CloseIdleConnections() // startDrain's probes

	// Connection: close, on the first kept connection.
	wait := sendWhole(kept[0], rawHead(rq, unreadBodyBytes, true), unreadBodyBytes)
	require.NoError(t, kept[0].SetReadDeadline(time.Now().Add(20*time.Second)))
	resp := readCoded(t, readers[0], rq.code)
	assert.Equal(t, "1", resp.Header.Get(protocol.HeaderDraining))
	requireFIN(t, readers[0])
	wait()

	// Keep-alive, on the second.
	requireRefusalOnKeptConnection(t, kept[1], readers[1], rq)
	assert.Zero(t, srv.entered.Load())
	select {
	case err := <-drained:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not end once its connections were closed")
	}
}

// A peer that declares a body and sends only part of it holds its
// connection no longer than Limits.BodyReadTimeout: it then gets its
// refusal and the server's FIN, whether or not it asked to close.
func TestRefusalOfABodyNeverSentIsBoundedByTheReadTimeout(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.Limits.BodyReadTimeout = 200 * time.Millisecond
	})
	addr := strings.TrimPrefix(srv.URL, "http://")
	rq := refusedRequest{"stale session", http.MethodPost, protocol.CallPath("bench", "1.0.0", "ReportStatus"),
		map[string]string{protocol.HeaderSession: "stale"}, framework.CodeHandshakeRequired}
	for _, close := range []bool{true, false} {
		t.Run(fmt.Sprintf("close=%v", close), func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = io.WriteString(conn, rawHead(rq, unreadBodyBytes, close)+strings.Repeat("x", 10<<10))
			require.NoError(t, err)
			// Far more than the read timeout: the answer and the FIN
			// come once it has passed.
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			br := bufio.NewReader(conn)
			assert.True(t, readCoded(t, br, rq.code).Close, "what follows on the wire is no request")
			requireFIN(t, br)
		})
	}
}

// A refused request's body is read by its own framing and no further: a
// request written inside the body is never served, and the request that
// follows the body on the connection is.
func TestRefusedBodyIsNeverTakenForARequest(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	addr := strings.TrimPrefix(srv.URL, "http://")
	rq := refusedRequest{"stale session", http.MethodPost, protocol.CallPath("bench", "1.0.0", "ReportStatus"),
		map[string]string{protocol.HeaderSession: "stale"}, framework.CodeHandshakeRequired}
	inner := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	chunked := strings.Replace(rawHead(rq, 0, false), "Content-Length: 0\r\n", "Transfer-Encoding: chunked\r\n", 1) +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(inner), inner)
	for name, request := range map[string]string{
		"content-length": rawHead(rq, len(inner), false) + inner,
		"chunked":        chunked,
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = io.WriteString(conn, request+"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
			br := bufio.NewReader(conn)
			readCoded(t, br, rq.code)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, "the next answer is the next request's, not the body's: %s", body)
			requireFIN(t, br) // and no answer for a request inside the body
		})
	}
	assert.Zero(t, srv.entered.Load())
}
