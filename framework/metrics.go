package framework

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep-dev/lockstep/handshake"
)

// PathMetrics is where a server serves its Prometheus metrics by default.
const PathMetrics = "/metrics"

// Metrics is lockstep's Prometheus instrumentation of a process: handshakes
// by outcome and reason, calls by contract, version, method and code with latency,
// time callers spent blocked waiting for a compatible peer, sessions by
// agreed version, session lapses, refusals by limit, topics, watchers and
// coalescing.
// docs/operations.md lists every metric and what to alert on.
//
// A server makes one of its own unless ServerConfig says otherwise, and
// serves it at /metrics; give the same Metrics to the process's clients
// (ClientConfig.Observer = m.Client()) and other servers
// (ServerConfig.Metrics), so one scrape sees the whole process.
type Metrics struct {
	reg        prometheus.Registerer
	handler    http.Handler
	handshakes *prometheus.CounterVec
	calls      *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	blocked    *prometheus.HistogramVec
	lapses     *prometheus.CounterVec
	refusals   *prometheus.CounterVec
	onBehalf   *prometheus.CounterVec
	evictions  *prometheus.CounterVec

	mu      sync.Mutex
	servers []*Server
	clients []*Client
	// watched is servers, for the label checks of every event: read
	// without m.mu, replaced whole by Watch.
	watched atomic.Pointer[[]*Server]
}

// NewMetrics creates lockstep's collectors and registers them with reg.
// A nil reg means a new registry of its own, with Go runtime and process
// collectors beside lockstep's. [Metrics.Handler] serves reg when it is
// also a [prometheus.Gatherer] (a *prometheus.Registry is).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	m := &Metrics{
		reg: reg,
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_handshakes_total",
			Help: "Handshakes by side, contract, outcome (welcome, refused, error, or unreachable on the client side) and reason (the refusal reason, the error code, or none).",
		}, []string{"side", "contract", "outcome", "reason"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_calls_total",
			Help: "Finished calls by side, contract, version travelled at, method and code (ok on success).",
		}, []string{"side", "contract", "version", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockstep_call_duration_seconds",
			Help:    "Call latency by side, contract and method; on the client it includes blocking and resends.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}, []string{"side", "contract", "method"}),
		blocked: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockstep_blocked_seconds",
			Help:    "How long client calls that had to wait waited for a compatible peer, by contract.",
			Buckets: prometheus.ExponentialBuckets(0.001, 3, 12),
		}, []string{"contract"}),
		lapses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_session_lapses_total",
			Help: "Sessions the server closed because no call or heartbeat renewed them within their TTL, by contract.",
		}, []string{"contract"}),
		onBehalf: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_on_behalf_total",
			Help: "Entries an operator identity asked on behalf of a client component (Lockstep-On-Behalf-Of), by entry (handshake: a dry run; watch), contract (as served, else _unknown) and outcome (accepted, a refusal reason or an error code).",
		}, []string{"entry", "contract", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_limit_refusals_total",
			Help: "Entries a server refused, and watch streams it closed with an overflow frame, for going over one of its limits, by limit.",
		}, []string{"limit"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_idempotency_evictions_total",
			Help: "Finished idempotency records a server forgot before their window ended, to stay within a bound, by limit (idempotency_keys_per_peer, idempotency_bytes_per_peer, idempotency_bytes): a resend of such a call is no longer answered from its record.",
		}, []string{"limit"}),
	}
	for _, l := range allLimits {
		m.refusals.WithLabelValues(string(l))
	}
	for _, l := range replayLimits {
		m.evictions.WithLabelValues(string(l))
	}
	m.handler = http.NotFoundHandler()
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	}
	reg.MustRegister(m.handshakes, m.calls, m.latency, m.blocked, m.lapses, m.refusals, m.onBehalf, m.evictions, stateCollector{m})
	return m
}

// Registerer returns the registry the metrics are registered with, so a
// binary can add its own collectors and have them served beside them.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Handler serves the metrics in the Prometheus exposition format; it
// answers 404 when the registerer given to [NewMetrics] cannot be gathered.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Server returns the observer that records a server's handshakes and calls;
// a server given these metrics in ServerConfig.Metrics uses it itself.
func (m *Metrics) Server() ServerObserver { return serverMetrics{m} }

// Client returns the observer to set as ClientConfig.Observer.
func (m *Metrics) Client() ClientObserver { return clientMetrics{m} }

// Watch adds srv's sessions and topics to the gauges read at scrape time.
// A server calls it for the Metrics of its config.
func (m *Metrics) Watch(srv *Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers = append(m.servers, srv)
	watched := slices.Clone(m.servers)
	m.watched.Store(&watched)
}

// WatchClient adds c's endpoints and blocked calls to the gauges read at
// scrape time; [Server.AddClient] calls it.
func (m *Metrics) WatchClient(c *Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clients = append(m.clients, c)
}

func (m *Metrics) sessionLapsed(contract string) {
	if m != nil {
		m.lapses.WithLabelValues(contract).Inc()
	}
}

// limitRefused counts a refusal for going over l.
func (m *Metrics) limitRefused(l limit) {
	if m != nil {
		m.refusals.WithLabelValues(string(l)).Inc()
	}
}

// idempotencyEvicted counts a finished idempotency record forgotten
// before its window ended, to keep within l (m may be nil: no metrics).
func (m *Metrics) idempotencyEvicted(l limit) {
	if m != nil {
		m.evictions.WithLabelValues(string(l)).Inc()
	}
}

// onBehalfEntry counts an entry asked on behalf of a client component
// (m may be nil: no metrics).
func (m *Metrics) onBehalfEntry(kind EntryKind, contract, outcome string) {
	if m == nil {
		return
	}
	contract, _, _ = m.served(contract, "", "")
	m.onBehalf.WithLabelValues(string(kind), contract, outcome).Inc()
}

// UnknownLabel is the one label value under which a server counts every
// contract, version and method it does not serve, and a client every
// refusal reason it does not know: metric labels come only from what the
// process itself declares, never from what a request or an answer names,
// so that requests to made-up paths (unauthenticated ones included) add no
// series (docs/security.md). No contract, version or method name can take
// this value.
const UnknownLabel = "_unknown"

// codeLabel is a code's label: "ok" for none, [UnknownLabel] for a code
// that is not one of the closed set.
func codeLabel(c Code) string {
	switch {
	case c == "":
		return "ok"
	case c.Valid() || c == CodeUnknown:
		return string(c)
	}
	return UnknownLabel
}

type serverMetrics struct{ m *Metrics }

func (o serverMetrics) Handshake(contract, outcome, reason string) {
	contract, _, _ = o.m.served(contract, "", "")
	o.m.handshakes.WithLabelValues("server", contract, outcome, reasonLabel(reason)).Inc()
}

// reasonLabel is a handshake's reason label: "none" for a welcome or an
// unreachable endpoint, a refusal reason or a code of the closed sets, or
// [UnknownLabel] for anything else (a hostile server's made-up reason).
func reasonLabel(reason string) string {
	switch handshake.Reason(reason) {
	case "":
		return "none"
	case handshake.ReasonVersionMismatch, handshake.ReasonFingerprintMismatch, handshake.ReasonRoleMismatch,
		handshake.ReasonReleaseConstraint, handshake.ReasonDraining:
		return reason
	}
	return codeLabel(Code(reason))
}

func (o serverMetrics) Call(contract, version, method string, code Code, took time.Duration) {
	contract, version, method = o.m.served(contract, version, method)
	o.m.calls.WithLabelValues("server", contract, version, method, codeLabel(code)).Inc()
	o.m.latency.WithLabelValues("server", contract, method).Observe(took.Seconds())
}

// served returns the labels of a server event: each of contract, version
// and method as given where a watched server serves it (the version within
// the contract, the method within the version), [UnknownLabel] where none
// does. A version or method given as "" is not asked for and comes back
// "".
func (m *Metrics) served(contract, version, method string) (string, string, string) {
	c, v, me := UnknownLabel, UnknownLabel, UnknownLabel
	if w := m.watched.Load(); w != nil {
		for _, s := range *w {
			hasC, hasV, hasM := s.serves(contract, version, method)
			if hasC {
				c = contract
			}
			if hasV {
				v = version
			}
			if hasM {
				me = method
				break
			}
		}
	}
	if version == "" {
		v = ""
	}
	if method == "" {
		me = ""
	}
	return c, v, me
}

type clientMetrics struct{ m *Metrics }

func (o clientMetrics) Handshake(contract, _, outcome, reason string) {
	o.m.handshakes.WithLabelValues("client", contract, outcome, reasonLabel(reason)).Inc()
}

func (o clientMetrics) Blocked(contract string, waited time.Duration) {
	o.m.blocked.WithLabelValues(contract).Observe(waited.Seconds())
}

func (o clientMetrics) Call(contract, version, method string, code Code, took time.Duration) {
	o.m.calls.WithLabelValues("client", contract, version, method, codeLabel(code)).Inc()
	o.m.latency.WithLabelValues("client", contract, method).Observe(took.Seconds())
}

// teeServerObserver sends a server's events to two observers.
type teeServerObserver struct{ a, b ServerObserver }

func (t teeServerObserver) Handshake(contract, outcome, reason string) {
	t.a.Handshake(contract, outcome, reason)
	t.b.Handshake(contract, outcome, reason)
}

func (t teeServerObserver) Call(contract, version, method string, code Code, took time.Duration) {
	t.a.Call(contract, version, method, code, took)
	t.b.Call(contract, version, method, code, took)
}

var (
	sessionsDesc = prometheus.NewDesc("lockstep_sessions",
		"Live sessions held by this process's servers, by contract and agreed version (in fork mode: who still speaks an old version).",
		[]string{"contract", "version"}, nil)
	topicKeysDesc = prometheus.NewDesc("lockstep_topic_keys",
		"Objects a topic holds, by contract, version and topic.", []string{"contract", "version", "topic"}, nil)
	topicWritersDesc = prometheus.NewDesc("lockstep_topic_writers",
		"Writers that own keys of a topic or were seen writing it; 0 means nobody keeps it current.", []string{"contract", "version", "topic"}, nil)
	topicChangesDesc = prometheus.NewDesc("lockstep_topic_changes_total",
		"Changes applied to a topic since the server started, by kind (set or delete).", []string{"contract", "version", "topic", "kind"}, nil)
	watchersDesc = prometheus.NewDesc("lockstep_watchers",
		"Live watch streams of a topic.", []string{"contract", "version", "topic"}, nil)
	watchQueuedDesc = prometheus.NewDesc("lockstep_watch_queued",
		"Keys waiting to be sent to a topic's watchers now, summed over its watchers (bounded by keys × watchers).", []string{"contract", "version", "topic"}, nil)
	coalescedDesc = prometheus.NewDesc("lockstep_watch_coalesced_total",
		"Changes replaced in a watcher's queue by a later change of the same key before being sent.", []string{"contract", "version", "topic"}, nil)
	endpointsDesc = prometheus.NewDesc("lockstep_client_endpoints",
		"Endpoints of this process's clients by contract and state (ready, refused, unreachable, draining, connecting).", []string{"contract", "state"}, nil)
	blockedNowDesc = prometheus.NewDesc("lockstep_client_blocked_calls",
		"Calls waiting for a compatible peer now, by contract.", []string{"contract"}, nil)
)

// stateCollector reads the watched servers' and clients' state at scrape
// time: nothing is updated per event for these.
type stateCollector struct{ m *Metrics }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sessionsDesc, topicKeysDesc, topicWritersDesc, topicChangesDesc,
		watchersDesc, watchQueuedDesc, coalescedDesc, endpointsDesc, blockedNowDesc} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	servers := append([]*Server(nil), c.m.servers...)
	clients := append([]*Client(nil), c.m.clients...)
	c.m.mu.Unlock()
	sessions := map[[2]string]int{}
	type topicKey [3]string
	type topicSum struct {
		keys, writers, watchers, queued int
		sets, deletes, coalesced        uint64
	}
	topics := map[topicKey]*topicSum{}
	for _, srv := range servers {
		for _, sess := range srv.sessions.snapshot() {
			sessions[[2]string{sess.contract, sess.version}]++
		}
		for _, t := range srv.TopicStats() {
			k := topicKey{t.Contract, t.Version, t.Topic}
			sum := topics[k]
			if sum == nil {
				sum = &topicSum{}
				topics[k] = sum
			}
			sum.keys += t.Keys
			sum.writers += t.Writers
			sum.watchers += len(t.Watchers)
			sum.sets += t.Sets
			sum.deletes += t.Deletes
			sum.coalesced += t.Coalesced
			for _, w := range t.Watchers {
				sum.queued += w.Queued
			}
		}
	}
	for k, n := range sessions {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for k, t := range topics {
		ch <- prometheus.MustNewConstMetric(topicKeysDesc, prometheus.GaugeValue, float64(t.keys), k[:]...)
		ch <- prometheus.MustNewConstMetric(topicWritersDesc, prometheus.GaugeValue, float64(t.writers), k[:]...)
		ch <- prometheus.MustNewConstMetric(watchersDesc, prometheus.GaugeValue, float64(t.watchers), k[:]...)
		ch <- prometheus.MustNewConstMetric(watchQueuedDesc, prometheus.GaugeValue, float64(t.queued), k[:]...)
		ch <- prometheus.MustNewConstMetric(coalescedDesc, prometheus.CounterValue, float64(t.coalesced), k[:]...)
		ch <- prometheus.MustNewConstMetric(topicChangesDesc, prometheus.CounterValue, float64(t.sets), k[0], k[1], k[2], "set")
		ch <- prometheus.MustNewConstMetric(topicChangesDesc, prometheus.CounterValue, float64(t.deletes), k[0], k[1], k[2], "delete")
	}
	endpoints := map[[2]string]int{}
	blocked := map[string]int{}
	for _, cl := range clients {
		for _, e := range cl.Endpoints() {
			endpoints[[2]string{cl.contract.Name(), e.State}]++
		}
		n, _ := cl.blocked.snapshot(cl.cfg.Clock.Now())
		blocked[cl.contract.Name()] += n
	}
	for k, n := range endpoints {
		ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for contract, n := range blocked {
		ch <- prometheus.MustNewConstMetric(blockedNowDesc, prometheus.GaugeValue, float64(n), contract)
	}
}

// serves says whether s serves contract, version within it, and method
// within that version, for the labels of [Metrics]: a method is known by
// its handler, so a multi-call's unknown method is not.
func (s *Server) serves(contract, version, method string) (hasContract, hasVersion, hasMethod bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sc := s.contracts[contract]
	if sc == nil {
		return false, false, false
	}
	sv := sc.versions[version]
	if sv == nil {
		return true, false, false
	}
	_, hasMethod = sv.methods[method]
	return true, true, hasMethod
}
