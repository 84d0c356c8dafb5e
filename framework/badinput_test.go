package framework_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// rawAnswer is an HTTP answer decoded as the lockstep error shape.
type rawAnswer struct {
	status  int
	header  http.Header
	code    string
	message string
	details json.RawMessage
	body    []byte
}

// rawClient makes a new connection per request, so a test can restart a
// server without meeting its old connections.
var rawClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func do(t *testing.T, method, url string, header map[string]string, body []byte) rawAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := rawClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := rawAnswer{status: resp.StatusCode, header: resp.Header, body: b}
	var w struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	}
	if json.Unmarshal(b, &w) == nil {
		a.code, a.message, a.details = w.Code, w.Message, w.Details
	}
	return a
}

func hello(t *testing.T, contract, component string, versions ...string) []byte {
	t.Helper()
	h := handshake.Hello{Contract: contract, Component: component, Instance: "inst-1", Release: "1.31.0"}
	for _, v := range versions {
		h.Offers = append(h.Offers, benchContract(t, v).Offer())
	}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	return b
}

// openSession opens a session of the bench contract by hand and returns
// its token; it is closed when the test ends.
func openSession(t *testing.T, url string, versions ...string) string {
	t.Helper()
	a := do(t, http.MethodPost, url+protocol.PathHandshake, nil, hello(t, "bench", "kubelet", versions...))
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	var w handshake.Welcome
	require.NoError(t, json.Unmarshal(a.body, &w))
	require.NotEmpty(t, w.Session)
	t.Cleanup(func() { closeRawSession(url, w.Session) }) // see rawHandshake
	return w.Session
}

func TestBadInputGetsCodedErrorsAndServerKeepsServing(t *testing.T) {
	// The server speaks 1.0.0 and 2.0.0, so a session agreed at one version
	// can be used at the other's path.
	handled := 0
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MaxBodyBytes: 64 << 10}
	srv := frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		for _, v := range []string{"1.0.0", "2.0.0"} {
			c := benchContract(t, v)
			framework.HandleUnary(s, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				handled++
				return &benchmsg.Ack{Accepted: true}, nil
			})
			framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				return &benchmsg.Ack{Accepted: true}, nil
			})
		}
	})
	token := openSession(t, srv.URL, "1.0.0")
	valid, err := json.Marshal(benchmsg.Node(1))
	require.NoError(t, err)
	callURL := srv.URL + protocol.CallPath("bench", "1.0.0", "ReportStatus")
	withSession := map[string]string{protocol.HeaderSession: token}

	cases := []struct {
		name    string            // what is wrong
		method  string            // HTTP method
		path    string            // path on the server
		header  map[string]string // request headers
		body    []byte            // request body
		status  int               // expected HTTP status
		code    framework.Code    // expected error code
		message string            // a part of the expected message
	}{
		{"malformed JSON hello", "POST", protocol.PathHandshake, nil, []byte(`{"contract":`), 400, framework.CodeInvalidArgument, "not valid JSON"},
		{"hello without offers", "POST", protocol.PathHandshake, nil, []byte(`{"contract":"bench","component":"kubelet","instance":"x"}`), 400, framework.CodeInvalidArgument, "offers"},
		{"hello with a bad fingerprint", "POST", protocol.PathHandshake, nil, []byte(`{"contract":"bench","component":"kubelet","instance":"x","offers":[{"version":"1.0.0","fingerprint":"md5:x"}]}`), 400, framework.CodeInvalidArgument, "fingerprint"},
		{"unknown contract", "POST", protocol.PathHandshake, nil, hello(t, "nodeweather", "kubelet", "1.0.0"), 404, framework.CodeNotFound, "nodeweather"},
		{"wrong role", "POST", protocol.PathHandshake, nil, hello(t, "bench", "scheduler", "1.0.0"), 403, framework.CodePermissionDenied, "scheduler is not a client of bench"},
		{"oversized hello", "POST", protocol.PathHandshake, nil, bytes.Repeat([]byte(" "), 65<<10), 413, framework.CodePayloadTooLarge, "exceeds"},
		{"call without session", "POST", protocol.CallPath("bench", "1.0.0", "ReportStatus"), nil, valid, 409, framework.CodeHandshakeRequired, "handshake first"},
		{"stale session", "POST", protocol.CallPath("bench", "1.0.0", "ReportStatus"), map[string]string{protocol.HeaderSession: "0123456789abcdef"}, valid, 409, framework.CodeHandshakeRequired, "handshake again"},
		{"path version is not the agreed one", "POST", protocol.CallPath("bench", "2.0.0", "ReportStatus"), withSession, valid, 409, framework.CodeIncompatiblePeer, "agreed bench 1.0.0"},
		{"version the server does not speak", "POST", protocol.CallPath("bench", "9.0.0", "ReportStatus"), withSession, valid, 409, framework.CodeIncompatiblePeer, "does not speak bench 9.0.0"},
		{"unknown method", "POST", protocol.CallPath("bench", "1.0.0", "Reboot"), withSession, valid, 404, framework.CodeNotFound, "Reboot"},
		{"unknown contract in path", "POST", protocol.CallPath("nodeweather", "1.0.0", "Get"), withSession, valid, 404, framework.CodeNotFound, "nodeweather"},
		{"oversized body", "POST", protocol.CallPath("bench", "1.0.0", "ReportStatus"), withSession, bytes.Repeat([]byte("x"), 65<<10), 413, framework.CodePayloadTooLarge, "exceeds"},
		{"body is not JSON", "POST", protocol.CallPath("bench", "1.0.0", "ReportStatus"), withSession, []byte("nodeName=x"), 400, framework.CodeInvalidArgument, "not valid JSON"},
		{"schema-invalid body", "POST", protocol.CallPath("bench", "1.0.0", "ReportStatus"), withSession, []byte(`{"nodeName":"Bad_Name"}`), 400, framework.CodeInvalidArgument, "does not match its schema"},
		{"batch body without items", "POST", protocol.CallPath("bench", "1.0.0", "ReportStatuses"), withSession, []byte(`{}`), 400, framework.CodeInvalidArgument, "items is missing"},
		{"malformed timeout", "POST", protocol.CallPath("bench", "1.0.0", "ReportStatus"), map[string]string{protocol.HeaderSession: token, protocol.HeaderTimeout: "soon"}, valid, 400, framework.CodeInvalidArgument, "Lockstep-Timeout"},
		{"unknown path", "GET", "/lockstep/nothing", nil, nil, 404, framework.CodeNotFound, "no such path"},
		{"wrong HTTP method", "GET", protocol.PathHandshake, nil, nil, 404, framework.CodeNotFound, "not served"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, tc.method, srv.URL+tc.path, tc.header, tc.body)
			assert.Equal(t, tc.status, a.status, string(a.body))
			assert.Equal(t, string(tc.code), a.code)
			assert.Contains(t, a.message, tc.message)
			assert.Equal(t, tc.code.HTTPStatus(), a.status, "the code's one status")
			// None of these reached a handler. The refusals a resend can cure
			// say so; a request that is itself wrong (invalid_argument,
			// payload_too_large) is not marked, since resending it cannot
			// succeed (docs/protocol.md, "Resends").
			if tc.code == framework.CodeInvalidArgument || tc.code == framework.CodePayloadTooLarge {
				assert.Empty(t, a.header.Get(protocol.HeaderNotProcessed), "Lockstep-Not-Processed")
			} else {
				assert.Equal(t, "1", a.header.Get(protocol.HeaderNotProcessed), "Lockstep-Not-Processed")
			}
		})
	}

	// The schema violation names where it is.
	a := do(t, http.MethodPost, callURL, withSession, []byte(`{"nodeName":"Bad_Name"}`))
	assert.Contains(t, string(a.details), `"instance":"/nodeName"`)
	// The role refusal carries the structured refusal.
	a = do(t, http.MethodPost, srv.URL+protocol.PathHandshake, nil, hello(t, "bench", "scheduler", "1.0.0"))
	var refusal handshake.Refusal
	require.NoError(t, json.Unmarshal(a.details, &refusal))
	assert.Equal(t, handshake.ReasonRoleMismatch, refusal.Reason)

	// None of that reached a handler, and the server still serves.
	assert.Zero(t, handled)
	a = do(t, http.MethodPost, callURL, withSession, valid)
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	assert.JSONEq(t, `{"accepted":true,"generation":0}`, string(a.body))
	assert.Equal(t, 1, handled)
}

// TestRefusalOfAnUnreadBodyEndsWithoutAReset sends a body over the limit
// with Connection: close, as a client that keeps no connections does. The
// server refuses it on its Content-Length without reading it; closing a
// socket with bytes unread resets it, and a reset can reach the peer
// before it has read the refusal. So the peer must read the coded refusal
// and then the server's FIN.
func TestRefusalOfAnUnreadBodyEndsWithoutAReset(t *testing.T) {
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MaxBodyBytes: 64 << 10}
	srv := frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		c := benchContract(t, "1.0.0")
		ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		}
		framework.HandleUnary(s, c, "ReportStatus", ack)
		framework.HandleBatch(s, c, "ReportStatuses", ack)
	})
	token := openSession(t, srv.URL, "1.0.0")
	for _, tc := range []struct{ name, path, header string }{
		{"hello", protocol.PathHandshake, ""},
		{"call", protocol.CallPath("bench", "1.0.0", "ReportStatus"), protocol.HeaderSession + ": " + token + "\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			// More than the server's read buffer takes with the head, so
			// bytes stay unread in its socket.
			head := "POST " + tc.path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
				tc.header + "Content-Length: 100000\r\n\r\n"
			_, err = io.WriteString(conn, head+strings.Repeat("x", 32<<10))
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
			br := bufio.NewReader(conn)
			readCoded(t, br, framework.CodePayloadTooLarge)
			requireFIN(t, br)
		})
	}
}
