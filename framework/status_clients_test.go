package framework_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// A process that only calls serves its status, readiness and metrics
// without a server of its own, and so without a server's warning that its
// peers are not authenticated.
func TestClientStatusHandlerServesAClientOnlyProcess(t *testing.T) {
	up := startBench(t, "127.0.0.1:0", "1.0.0")
	m := framework.NewMetrics(nil)
	cl := benchClient(t, "2.0.0", []string{up.URL}, func(c *framework.ClientConfig) { c.Observer = m.Client() })
	endpointStateEventually(t, cl, up.URL, "refused")

	h := framework.NewClientStatusHandler(framework.ClientStatusConfig{Component: "kubelet", Release: "1.31.0", Clients: []*framework.Client{cl}, Metrics: m})
	web := httptest.NewServer(h)
	defer web.Close()
	get := func(path, accept string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, web.URL+path, nil)
		require.NoError(t, err)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, body := get("/lockstep/status", "")
	require.Equal(t, http.StatusOK, code, body)
	var st framework.ServerStatus
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Equal(t, "kubelet", st.Component)
	assert.Len(t, st.Instance, 16)
	assert.False(t, st.Ready)
	assert.True(t, strings.HasPrefix(st.NotReady, "bench client: incompatible_peer: no compatible nodecontroller for bench 2.0.0: "+up.URL+" refused (version_mismatch)"), st.NotReady)
	require.Len(t, st.Clients, 1)
	assert.Equal(t, "refused", st.Clients[0].Endpoints[0].State)

	code, body = get("/lockstep/status", "text/html")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `<table id="clients">`)

	code, body = get("/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.True(t, strings.HasPrefix(body, "not ready: bench client: incompatible_peer: "), body)
	assert.Equal(t, 1, strings.Count(body, "not ready"))
	code, _ = get("/healthz", "")
	assert.Equal(t, http.StatusOK, code)

	code, body = get("/metrics", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `lockstep_handshakes_total{contract="bench",outcome="refused",reason="version_mismatch",side="client"}`)
	assert.Contains(t, body, `lockstep_client_endpoints{contract="bench",state="refused"} 1`)

	// A process whose clients are all ready is ready.
	ok := benchClient(t, "1.0.0", []string{up.URL})
	require.NoError(t, ok.WaitReady(timeout(t, 10*time.Second)))
	readyWeb := httptest.NewServer(framework.NewClientStatusHandler(framework.ClientStatusConfig{Component: "kubelet", Release: "1.31.0", Clients: []*framework.Client{ok}}))
	defer readyWeb.Close()
	resp, err := http.Get(readyWeb.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Get(readyWeb.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "without metrics, /metrics is not served")
}
