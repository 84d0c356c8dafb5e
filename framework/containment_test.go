package framework_test

// The containment suite: the attacks of a stolen node certificate, and of
// peers without any, each in a bounded form that runs in seconds. Each test
// asserts what the attack may no longer do and what the legitimate peer
// still gets. `make abuse` runs the same attacks at full size against
// the sample's node controller (sample/cmd/abuse) and reports RSS, the
// legitimate peer's p99, whether its node is published and whether its
// watch opens.

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// seriesCount is how many samples a registry exposes: what a scrape reads.
func seriesCount(t *testing.T, reg prometheus.Gatherer) int {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			n++
			if h := m.GetHistogram(); h != nil {
				n += len(h.GetBucket()) + 2
			}
		}
	}
	return n
}

// anonymous is a client without a certificate: it completes TLS, as a
// Kubernetes probe does, and is answered unauthenticated everywhere but the
// health paths.
func (a *abuseServer) anonymous(t *testing.T) *attacker {
	cfg := &tls.Config{RootCAs: a.ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	tr := &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &attacker{t: t, a: a, cfg: cfg, tr: tr, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Attack 1: requests to made-up paths, with and without a certificate,
// and hellos naming made-up contracts, each of which added series to
// /metrics for good (50,000 of them made a 258 MiB scrape). Metric labels
// now come only from what the server declares: whatever the requests
// name, the series stop growing after the first of each kind, while the
// legitimate peer's calls are still counted under their own names.
func TestContainUnauthenticatedRequestsAddNoSeries(t *testing.T) {
	a := startAbuseServer(t)
	reg := a.Server.Metrics().Registerer().(*prometheus.Registry)
	anon, evil := a.anonymous(t), a.attacker(t)
	bench := benchContract(t, "1.0.0")
	attack := func(round, n int) {
		for i := range n {
			path := fmt.Sprintf("/lockstep/c%d-%d/v%d/M%d", round, i, i, i)
			code, v := anon.post(http.MethodPost, path, "", []byte(`{}`))
			require.Equal(t, http.StatusUnauthorized, code, v)
			code, v = evil.post(http.MethodPost, path, "", []byte(`{}`))
			require.Contains(t, []int{http.StatusNotFound, http.StatusConflict}, code, v)
			code, v = evil.post(http.MethodPost, protocol.CallPath("bench", "1.0.0", fmt.Sprintf("M%d-%d", round, i)), "", []byte(`{}`))
			require.Equal(t, http.StatusNotFound, code, v)
			hello := abuseHello(bench, fmt.Sprintf("evil-%d-%d", round, i))
			hello = []byte(strings.Replace(string(hello), `"contract":"bench"`, fmt.Sprintf(`"contract":"made-up-%d-%d"`, round, i), 1))
			code, v = anon.post(http.MethodPost, protocol.PathHandshake, "", hello)
			require.Equal(t, http.StatusUnauthorized, code, v)
			code, v = evil.post(http.MethodPost, protocol.PathHandshake, "", hello)
			require.Equal(t, http.StatusNotFound, code, v)
		}
	}
	attack(0, 3)
	base := seriesCount(t, reg)
	attack(1, 200)
	assert.Equal(t, base, seriesCount(t, reg), "600 made-up paths and 400 made-up contracts add no series")
	assert.Equal(t, 203.0*2, sample(t, reg, "lockstep_calls_total", `contract="_unknown"`, `version="_unknown"`, `method="_unknown"`),
		"every call to a made-up contract is counted, under one label")
	assert.Equal(t, 203.0, sample(t, reg, "lockstep_calls_total", `contract="bench"`, `version="1.0.0"`, `method="_unknown"`),
		"every call to a made-up method of a served contract is counted, under one label")

	cl := benchClient(t, "1.0.0", []string{a.URL}, func(c *framework.ClientConfig) {
		creds, _ := frameworktestCredentials(t, a, "good")
		c.Transport = creds.Transport("")
	})
	_, err := report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	assert.Equal(t, 1.0, sample(t, reg, "lockstep_calls_total", `contract="bench"`, `version="1.0.0"`, `method="ReportStatus"`, `code="ok"`))
	resp, err := anon.hc.Get(a.URL + "/healthz")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "health stays open")
}

// frameworktestCredentials issues a kubelet certificate named name from the
// abuse server's CA.
func frameworktestCredentials(t *testing.T, a *abuseServer, name string) (*framework.Credentials, string) {
	t.Helper()
	return frameworktest.NewCredentials(t, a.ca, certs.Spec{Component: "kubelet", Name: name})
}
