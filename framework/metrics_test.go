package framework_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

func TestMetricsCountHandshakesCallsBlockingAndSessions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := framework.NewMetrics(reg)
	v1, v2 := benchContract(t, "1.0.0"), benchContract(t, "2.0.0")
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
	srvCfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", Metrics: m}
	old := frameworktest.StartServer(t, srvCfg, serve(v1))
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
		return sample(t, reg, "lockstep_handshakes_total", `side="server"`, `outcome="refused"`, `reason="version_mismatch"`) > 0
	}, 5*time.Second, 10*time.Millisecond)
	// A hello that is not one is an error, by its code.
	resp, err := http.Post(old.URL+protocol.PathHandshake, "application/json", strings.NewReader("not a hello"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 1.0, sample(t, reg, "lockstep_handshakes_total", `side="server"`, `outcome="error"`, `reason="invalid_argument"`))
	require.NoError(t, old.Stop())
	frameworktest.StartServerAt(t, old.Addr, srvCfg, serve(v2))
	require.NoError(t, <-done)
	_, err = framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 10*time.Second), cl, "ReportStatus", benchmsg.Node(13))
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(err))

	assert.Positive(t, sample(t, reg, "lockstep_handshakes_total", `side="client"`, `outcome="refused"`, `reason="version_mismatch"`))
	assert.Positive(t, sample(t, reg, "lockstep_handshakes_total", `side="server"`, `outcome="welcome"`, `reason="none"`))
	assert.Positive(t, sample(t, reg, "lockstep_handshakes_total", `side="client"`, `outcome="welcome"`, `reason="none"`))
	assert.Equal(t, 1.0, sample(t, reg, "lockstep_calls_total", `side="server"`, `version="2.0.0"`, `method="ReportStatus"`, `code="ok"`))
	assert.Equal(t, 1.0, sample(t, reg, "lockstep_calls_total", `side="server"`, `code="conflict"`))
	assert.Equal(t, 1.0, sample(t, reg, "lockstep_calls_total", `side="client"`, `version="2.0.0"`, `code="ok"`))
	assert.Equal(t, 1.0, sample(t, reg, "lockstep_blocked_seconds_count", `contract="bench"`))
	assert.Equal(t, 1.0, sample(t, reg, "lockstep_sessions", `contract="bench"`, `version="2.0.0"`))
}

// A server serves /metrics by default, with every metric of the set in
// docs/operations.md once it has something to count, and promlint finds
// nothing wrong with any of them.
func TestMetricsAreServedByDefaultAndPassPromlint(t *testing.T) {
	ts := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	require.NoError(t, ts.health.Set(&topicmsg.NodeHealth{Node: "n1", Ready: true}))
	watcher := topicClient(t, "1.0.0", []string{ts.URL})
	inf, err := framework.Watch[topicmsg.NodeHealth](context.Background(), watcher, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{})
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(timeout(t, 10*time.Second)))

	// A client of the component whose peer is not there blocks a call.
	orphan := frameworktest.NewClient(t, benchContract(t, "1.0.0"), framework.ClientConfig{Component: "kubelet",
		Release: "1.31.0", Endpoints: []string{"http://127.0.0.1:1"}, Observer: ts.Server.Metrics().Client()})
	ts.Server.AddClient(orphan)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = report(ctx, orphan, 1)
	require.Error(t, err)

	require.Eventually(t, func() bool {
		return strings.Contains(get(t, ts.URL+framework.PathMetrics),
			`lockstep_handshakes_total{contract="bench",outcome="unreachable",reason="none",side="client"}`)
	}, 10*time.Second, 10*time.Millisecond, "the handshake with no answer is counted as unreachable")
	body := get(t, ts.URL+framework.PathMetrics)
	for _, name := range []string{
		"lockstep_handshakes_total", "lockstep_calls_total", "lockstep_call_duration_seconds_bucket",
		"lockstep_blocked_seconds_bucket", "lockstep_sessions", "lockstep_topic_keys", "lockstep_topic_writers",
		"lockstep_topic_changes_total", "lockstep_watchers", "lockstep_watch_queued", "lockstep_watch_coalesced_total",
		"lockstep_client_endpoints", "lockstep_client_blocked_calls", "lockstep_limit_refusals_total",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		served := strings.Contains(body, "\n"+name+"{") || strings.Contains(body, "\n"+name+" ")
		assert.True(t, served, "metric %s is served", name)
	}
	lint(t, body)

	// A session that nobody renews lapses, and is counted.
	short := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = 300*time.Millisecond, 50*time.Millisecond
	})
	openSession(t, short.URL, "1.0.0")
	require.Eventually(t, func() bool {
		return strings.Contains(get(t, short.URL+framework.PathMetrics), "\nlockstep_session_lapses_total{contract=\"bench\"} 1\n")
	}, 10*time.Second, 10*time.Millisecond, "the unrenewed session lapsed")
	lint(t, get(t, short.URL+framework.PathMetrics))
}

// lint checks an exposition with promlint and fails on any problem.
func lint(t *testing.T, exposition string) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(exposition)).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestNoMetricsServesNone(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) { c.NoMetrics = true })
	assert.Nil(t, srv.Server.Metrics())
	a := do(t, http.MethodGet, srv.URL+framework.PathMetrics, nil, nil)
	assert.Equal(t, http.StatusNotFound, a.status)
}

// A binary's own /metrics replaces the default one.
func TestHandleMetricsReplacesTheDefault(t *testing.T) {
	s, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	s.Handle(framework.PathMetrics, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "mine\n") }))
	rec := &responseRecorder{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodGet, framework.PathMetrics, nil)
	s.ServeHTTP(rec, req)
	assert.Equal(t, "mine\n", rec.body.String())
}

type responseRecorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *responseRecorder) Header() http.Header         { return r.header }
func (r *responseRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *responseRecorder) WriteHeader(s int)           { r.status = s }

func get(t *testing.T, url string) string {
	t.Helper()
	a := do(t, http.MethodGet, url, nil, nil)
	require.Equal(t, http.StatusOK, a.status)
	return string(a.body)
}

// refusals is a server's lockstep_limit_refusals_total of one limit; the
// server must have metrics on a registry of their own (the default).
func refusals(t *testing.T, srv *framework.Server, limit string) float64 {
	t.Helper()
	reg, ok := srv.Metrics().Registerer().(*prometheus.Registry)
	require.True(t, ok, "the server's metrics have a registry of their own")
	return sample(t, reg, "lockstep_limit_refusals_total", `limit="`+limit+`"`)
}

// sample sums the samples of a metric family whose labels contain all of
// want.
func sample(t *testing.T, reg *prometheus.Registry, name string, want ...string) float64 {
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
