package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMetricsCountHandshakesCallsBlockingAndSessions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	v1, err := framework.NewContract(benchmsg.Contract("1.0.0"))
	require.NoError(t, err)
	v2, err := framework.NewContract(benchmsg.Contract("2.0.0"))
	require.NoError(t, err)
	serve := func(c *framework.Contract) func(*framework.Server) {
		return func(s *framework.Server) {
			h := func(_ context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				if n.NodeName == "node-0013" {
					return nil, framework.Errorf(framework.CodeConflict, "unlucky")
				}
				return &benchmsg.Ack{Accepted: true}, nil
			}
			framework.HandleUnary(s, c, "ReportStatus", h)
			framework.HandleBatch(s, c, "ReportStatuses", h)
		}
	}
	srvCfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", Observer: m.Server()}
	old := frameworktest.StartServer(t, srvCfg, serve(v1))
	m.WatchSessions(old.Server)
	cl := frameworktest.NewClient(t, v2, framework.ClientConfig{Component: "kubelet", Release: "1.0.0",
		Endpoints: []string{old.URL}, Observer: m.Client()})

	// The v2 client is refused and blocks until a v2 server replaces v1.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](ctx, cl, "ReportStatus", benchmsg.Node(1))
		done <- err
	}()
	require.Eventually(t, func() bool {
		return counter(t, reg, "lockstep_handshakes_total", `side="server"`, `outcome="version_mismatch"`) > 0
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, old.Stop())
	srv := frameworktest.StartServerAt(t, old.Addr, srvCfg, serve(v2))
	m.WatchSessions(srv.Server)
	require.NoError(t, <-done)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](ctx, cl, "ReportStatus", benchmsg.Node(13))
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(err))

	assert.Positive(t, counter(t, reg, "lockstep_handshakes_total", `side="client"`, `outcome="version_mismatch"`))
	assert.Positive(t, counter(t, reg, "lockstep_handshakes_total", `side="server"`, `outcome="welcome"`))
	assert.Equal(t, 1.0, counter(t, reg, "lockstep_calls_total", `side="server"`, `version="2.0.0"`, `method="ReportStatus"`, `code="ok"`))
	assert.Equal(t, 1.0, counter(t, reg, "lockstep_calls_total", `side="server"`, `code="conflict"`))
	assert.Equal(t, 1.0, counter(t, reg, "lockstep_calls_total", `side="client"`, `version="2.0.0"`, `code="ok"`))
	assert.Equal(t, 1.0, counter(t, reg, "lockstep_blocked_seconds_count", `contract="bench"`))
	assert.Equal(t, 1.0, counter(t, reg, "lockstep_sessions", `contract="bench"`, `version="2.0.0"`))
}

// counter sums the samples of a metric family whose labels contain all of
// want.
func counter(t *testing.T, reg *prometheus.Registry, name string, want ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		base := f.GetName()
		for _, m := range f.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + `="` + l.GetValue() + `",`
			}
			match := true
			for _, w := range want {
				match = match && strings.Contains(labels, w)
			}
			if !match {
				continue
			}
			switch {
			case base == name && m.Counter != nil:
				total += m.Counter.GetValue()
			case base == name && m.Gauge != nil:
				total += m.Gauge.GetValue()
			case base+"_count" == name && m.Histogram != nil:
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}
