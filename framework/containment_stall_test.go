package framework_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/stretchr/testify/assert"
)

// Attack 6: a request whose body stalls after its first byte was refused
// at the body deadline (deadline_exceeded) but its connection stayed open
// for good: the deadline was cleared before net/http's own discard of the
// unread body, which then waited without one (5,000 such connections were
// still open 40 s later). Now the connection closes right after the
// refusal, on every path that reads a body.
func TestContainStalledBodiesEndWithTheirConnection(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	srv, token := startCounter(t, framework.ServerConfig{Limits: framework.Limits{BodyReadTimeout: readTimeout}}, addOne)
	before := refusals(t, srv.Server, "body_read_timeout")
	heads := []string{
		"POST " + protocol.PathHandshake + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{",
		"POST " + protocol.CallPath("counter", "1.0.0", "Add") + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			protocol.HeaderSession + ": " + token + "\r\nContent-Length: 4000\r\n\r\n{",
		"POST " + protocol.PathHeartbeat + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{",
		"POST " + protocol.PathHandshake + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{",
	}
	var wg sync.WaitGroup
	for _, head := range heads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", srv.Addr)
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			_, err = io.WriteString(conn, head)
			assert.NoError(t, err)
			// Generous on a loaded machine: the answer comes at the body
			// deadline, the close at once after it.
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if !assert.NoError(t, err, "%q is answered", head) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode, "%q", head)
			_, err = br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "%q: the connection is closed after the refusal", head)
		}()
	}
	wg.Wait()
	assert.Equal(t, float64(len(heads)), refusals(t, srv.Server, "body_read_timeout")-before)
	a := do(t, http.MethodPost, srv.URL+protocol.CallPath("counter", "1.0.0", "Add"),
		map[string]string{protocol.HeaderSession: counterSession(t, srv.URL, "after")}, []byte(`{"n":1}`))
	assert.Equal(t, http.StatusOK, a.status, "the server keeps serving: %s", a.body)
}
