package framework_test

// Tests of what a client accepts when it is set up: TLS trust, plain HTTP
// only on loopback unless Insecure, and only contracts it is the client of.
// How clients and servers behave at run time is told in
// testdata/scenarios (scenario_test.go).

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

func TestTLS(t *testing.T) {
	certs := frameworktest.NewTLS(t, "kubelet")
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) { c.TLSConfig = certs.Server })
	require.True(t, strings.HasPrefix(srv.URL, "https://"))
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.TLSConfig = certs.Client })
	ack, err := report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	assert.True(t, ack.Accepted)

	// A client that does not trust the server's CA never gets a session.
	bad := benchClient(t, "1.0.0", []string{srv.URL})
	require.Eventually(t, func() bool {
		_, err = report(timeout(t, 5*time.Second), bad, 1, framework.FailFast())
		return err != nil && strings.Contains(err.Error(), "certificate")
	}, 10*time.Second, 10*time.Millisecond, "last error: %v", err)
	assert.Equal(t, framework.CodeUnavailable, framework.CodeOf(err))
}

func TestPlainHTTPRefusedOffLoopbackUnlessInsecure(t *testing.T) {
	_, err := framework.NewClient(benchContract(t, "1.0.0"), framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{"http://10.1.2.3:80"}})
	require.ErrorContains(t, err, "Insecure")
	cl, err := framework.NewClient(benchContract(t, "1.0.0"), framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{"http://[::1]:1"}, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	require.NoError(t, cl.Close())
}

func TestClientRejectsContractItIsNotTheClientOf(t *testing.T) {
	_, err := framework.NewClient(benchContract(t, "1.0.0"), framework.ClientConfig{
		Component: "scheduler", Release: "1.0.0", Endpoints: []string{"http://127.0.0.1:1"}})
	require.ErrorContains(t, err, "scheduler is not the client of bench")
}
