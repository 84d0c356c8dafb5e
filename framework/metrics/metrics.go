// Package metrics exposes lockstep's runtime as Prometheus metrics:
// handshakes by outcome, calls by method, code and latency, how long calls
// blocked waiting for a compatible peer, and live sessions by agreed version
// (which, in fork mode, shows when an old version can be retired).
//
// Wire it in through the runtime's observer hooks:
//
//	m := metrics.New(prometheus.DefaultRegisterer)
//	srv, _ := framework.NewServer(framework.ServerConfig{…, Observer: m.Server()})
//	m.WatchSessions(srv)
//	client, _ := framework.NewClient(c, framework.ClientConfig{…, Observer: m.Client()})
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep-dev/lockstep/framework"
)

// Metrics holds lockstep's collectors, registered once per registry.
type Metrics struct {
	reg        prometheus.Registerer
	handshakes *prometheus.CounterVec
	calls      *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	blocked    *prometheus.HistogramVec

	mu      sync.Mutex
	servers []*framework.Server
}

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_handshakes_total",
			Help: "Handshakes by side, contract and outcome (welcome, a refusal reason, or an error code).",
		}, []string{"side", "contract", "outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_calls_total",
			Help: "Finished calls by side, contract, version, method and code (ok on success).",
		}, []string{"side", "contract", "version", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockstep_call_duration_seconds",
			Help:    "Call latency by side, contract and method; on the client it includes blocking and resends.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}, []string{"side", "contract", "method"}),
		blocked: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockstep_blocked_seconds",
			Help:    "How long client calls waited for a compatible peer, by contract.",
			Buckets: prometheus.ExponentialBuckets(0.001, 3, 12),
		}, []string{"contract"}),
	}
	reg.MustRegister(m.handshakes, m.calls, m.latency, m.blocked, &sessionCollector{m: m})
	return m
}

// Server returns the observer to set as framework.ServerConfig.Observer.
func (m *Metrics) Server() framework.ServerObserver { return serverObserver{m} }

// Client returns the observer to set as framework.ClientConfig.Observer.
func (m *Metrics) Client() framework.ClientObserver { return clientObserver{m} }

// WatchSessions adds srv's live sessions, by contract and agreed version, to
// the lockstep_sessions gauge, read at scrape time.
func (m *Metrics) WatchSessions(srv *framework.Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers = append(m.servers, srv)
}

func codeLabel(c framework.Code) string {
	if c == "" {
		return "ok"
	}
	return string(c)
}

type serverObserver struct{ m *Metrics }

func (o serverObserver) Handshake(contract, outcome string) {
	o.m.handshakes.WithLabelValues("server", contract, outcome).Inc()
}

func (o serverObserver) Call(contract, version, method string, code framework.Code, took time.Duration) {
	o.m.calls.WithLabelValues("server", contract, version, method, codeLabel(code)).Inc()
	o.m.latency.WithLabelValues("server", contract, method).Observe(took.Seconds())
}

type clientObserver struct{ m *Metrics }

func (o clientObserver) Handshake(contract, _ string, outcome string) {
	o.m.handshakes.WithLabelValues("client", contract, outcome).Inc()
}

func (o clientObserver) Blocked(contract string, waited time.Duration) {
	o.m.blocked.WithLabelValues(contract).Observe(waited.Seconds())
}

func (o clientObserver) Call(contract, version, method string, code framework.Code, took time.Duration) {
	o.m.calls.WithLabelValues("client", contract, version, method, codeLabel(code)).Inc()
	o.m.latency.WithLabelValues("client", contract, method).Observe(took.Seconds())
}

var sessionsDesc = prometheus.NewDesc("lockstep_sessions",
	"Live sessions held by this process's servers, by contract and agreed version.",
	[]string{"contract", "version"}, nil)

// sessionCollector reads the watched servers' sessions at scrape time.
type sessionCollector struct{ m *Metrics }

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- sessionsDesc }

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	servers := append([]*framework.Server(nil), c.m.servers...)
	c.m.mu.Unlock()
	counts := map[[2]string]int{}
	for _, srv := range servers {
		for contract, byVersion := range srv.Status().PeersByVersion {
			for version, n := range byVersion {
				counts[[2]string{contract, version}] += n
			}
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
