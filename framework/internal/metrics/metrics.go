package metrics

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Set is one process's collectors, registered with one registry.
type Set struct {
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
	// without mu, replaced whole by WatchServer.
	watched atomic.Pointer[[]*Server]
}

// Server is what the collectors read of a server.
type Server struct {
	// Serves says whether the server serves contract, version within it,
	// and method within that version, for the labels of its events.
	Serves func(contract, version, method string) (hasContract, hasVersion, hasMethod bool)
	// Sessions returns the contract and agreed version of each live
	// session, read at scrape time.
	Sessions func() []Session
	// Topics returns the state of each topic, read at scrape time.
	Topics func() []Topic
}

// Session is one live session as the gauges count it.
type Session struct{ Contract, Version string }

// Topic is one topic's state as the gauges report it.
type Topic struct {
	Contract, Version, Topic string
	// Keys, Writers and Watchers are how many objects, writers and watch
	// streams it has; Queued the keys waiting to be sent, summed over its
	// watchers.
	Keys, Writers, Watchers, Queued int
	// Sets, Deletes and Coalesced count its changes since the server
	// started, and those a later change replaced in a watcher's queue.
	Sets, Deletes, Coalesced uint64
}

// Client is what the collectors read of a client at scrape time.
type Client struct {
	// Contract is the contract the client calls.
	Contract string
	// EndpointStates returns the state of each of its endpoints.
	EndpointStates func() []string
	// Blocked returns how many of its calls wait for a compatible peer now.
	Blocked func() int
}

// New creates the collectors and registers them with reg. A nil reg means
// a new registry of its own, with Go runtime and process collectors
// beside lockstep's. [Set.Handler] serves reg when it is also a
// [prometheus.Gatherer]. refusalLimits and evictionLimits are the label
// values of the limit refusals' and idempotency evictions' counters,
// exported at zero from the start.
func New(reg prometheus.Registerer, refusalLimits, evictionLimits []string) *Set {
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	m := &Set{
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
	for _, l := range refusalLimits {
		m.refusals.WithLabelValues(l)
	}
	for _, l := range evictionLimits {
		m.evictions.WithLabelValues(l)
	}
	m.handler = http.NotFoundHandler()
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	}
	reg.MustRegister(m.handshakes, m.calls, m.latency, m.blocked, m.lapses, m.refusals, m.onBehalf, m.evictions, stateCollector{m})
	return m
}

// Registerer returns the registry the collectors are registered with.
func (m *Set) Registerer() prometheus.Registerer { return m.reg }

// Handler serves the metrics in the Prometheus exposition format; it
// answers 404 when the registerer given to [New] cannot be gathered.
func (m *Set) Handler() http.Handler { return m.handler }

// WatchServer adds s's sessions and topics to the gauges read at scrape
// time, and what it serves to the labels its events may carry.
func (m *Set) WatchServer(s *Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers = append(m.servers, s)
	watched := slices.Clone(m.servers)
	m.watched.Store(&watched)
}

// WatchClient adds c's endpoints and blocked calls to the gauges read at
// scrape time.
func (m *Set) WatchClient(c *Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clients = append(m.clients, c)
}

// SessionLapsed counts a session closed for lapsing (m may be nil: no
// metrics).
func (m *Set) SessionLapsed(contract string) {
	if m != nil {
		m.lapses.WithLabelValues(contract).Inc()
	}
}

// LimitRefused counts a refusal for going over limit (m may be nil).
func (m *Set) LimitRefused(limit string) {
	if m != nil {
		m.refusals.WithLabelValues(limit).Inc()
	}
}

// IdempotencyEvicted counts a finished idempotency record forgotten
// before its window ended, to keep within limit (m may be nil).
func (m *Set) IdempotencyEvicted(limit string) {
	if m != nil {
		m.evictions.WithLabelValues(limit).Inc()
	}
}

// OnBehalfEntry counts an entry asked on behalf of a client component
// (m may be nil).
func (m *Set) OnBehalfEntry(kind, contract, outcome string) {
	if m == nil {
		return
	}
	contract, _, _ = m.served(contract, "", "")
	m.onBehalf.WithLabelValues(kind, contract, outcome).Inc()
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
func codeLabel(c apierror.Code) string {
	switch {
	case c == "":
		return "ok"
	case c.Valid() || c == apierror.CodeUnknown:
		return string(c)
	}
	return UnknownLabel
}

// ReasonLabel is a handshake's reason label: "none" for a welcome or an
// unreachable endpoint, a refusal reason or a code of the closed sets, or
// [UnknownLabel] for anything else (a hostile server's made-up reason).
func ReasonLabel(reason string) string {
	switch handshake.Reason(reason) {
	case "":
		return "none"
	case handshake.ReasonVersionMismatch, handshake.ReasonFingerprintMismatch, handshake.ReasonRoleMismatch,
		handshake.ReasonReleaseConstraint, handshake.ReasonDraining:
		return reason
	}
	return codeLabel(apierror.Code(reason))
}

// served returns the labels of a server event: each of contract, version
// and method as given where a watched server serves it (the version within
// the contract, the method within the version), [UnknownLabel] where none
// does. A version or method given as "" is not asked for and comes back
// "".
func (m *Set) served(contract, version, method string) (string, string, string) {
	c, v, me := UnknownLabel, UnknownLabel, UnknownLabel
	if w := m.watched.Load(); w != nil {
		for _, s := range *w {
			hasC, hasV, hasM := s.Serves(contract, version, method)
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
