package framework

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep-dev/lockstep/framework/internal/metrics"
	"github.com/lockstep-dev/lockstep/framework/internal/status"
	"github.com/lockstep-dev/lockstep/handshake"
)

// ServerStatus is the JSON of GET /lockstep/status: who the server is, what
// it serves, its peers' sessions, its topics, and the clients it was given
// with [Server.AddClient]. Durations travel as Go duration strings ("5s")
// and times as RFC 3339, so a person can read the JSON too.
type ServerStatus struct {
	Component string `json:"component"`
	Instance  string `json:"instance"`
	Release   string `json:"release"`
	// Now is the server's wall-clock time when the status was taken.
	Now      time.Time `json:"now"`
	Draining bool      `json:"draining"`
	Ready    bool      `json:"ready"`
	// NotReady is why /readyz fails, when it does: what is missing,
	// without /readyz's "not ready: " before it.
	NotReady string `json:"notReady,omitempty"`
	// Contracts lists the versions served of each contract.
	Contracts map[string][]string `json:"contracts"`
	// Served describes each contract version served, with its fingerprint
	// and the component that may call it: what a client must offer.
	Served []ServedVersion `json:"served"`
	// PeersByVersion counts live sessions per contract and agreed version:
	// in fork mode, it shows who still speaks an old version, so an operator
	// knows when the fork can be retired.
	PeersByVersion map[string]map[string]int `json:"peersByVersion"`
	// Sessions are the server's peers: one per (contract, client instance).
	// SessionCount is how many there are; the status a server serves lists
	// at most [StatusMaxSessions] of them (Truncated says so), while
	// PeersByVersion counts them all.
	SessionCount int           `json:"sessionCount"`
	Sessions     []SessionInfo `json:"sessions"`
	// Topics describes the topics the server holds, with their watchers.
	Topics []TopicStats `json:"topics"`
	// Clients describes the clients added with [Server.AddClient]: the
	// component's own outgoing peers.
	Clients []ClientStatus `json:"clients"`
	// Truncated says what the status served at /lockstep/status leaves
	// out to stay bounded, "" when it lists everything: sessions beyond
	// [StatusMaxSessions], watchers of a topic beyond [StatusMaxWatchers].
	Truncated string `json:"truncated,omitempty"`
}

// The bounds of the status a server serves (GET /lockstep/status, JSON
// and page): beyond them it lists sessions taken in turns from each
// identity that owns some, and the first watchers of each topic, counts
// them all, and says what it left out in [ServerStatus.Truncated], so
// that its size is the server's to decide, not its peers'.
// [Server.Status] itself is not bounded.
const (
	// StatusMaxSessions is the most sessions the served status lists.
	StatusMaxSessions = status.MaxSessions
	// StatusMaxWatchers is the most watchers of one topic it lists.
	StatusMaxWatchers = status.MaxWatchers
)

// bound cuts st to the bounds of a served status, saying what it left out.
func (st *ServerStatus) bound() {
	var cuts status.Cuts
	st.Sessions = cuts.Sessions(st.Sessions)
	for i := range st.Topics {
		t := &st.Topics[i]
		t.Watchers = t.Watchers[:cuts.Watchers(len(t.Watchers), t.Contract, t.Version, t.Topic)]
	}
	st.Truncated = cuts.Truncated()
}

// ServedVersion is one contract version a server serves: its Contract,
// Version and Fingerprint, and the Client component the contract lets
// call it. An alias of framework/internal/status's Served, not a copy, so
// that the status the server hands that package is served as it is.
type ServedVersion = status.Served

// Session states in [SessionInfo.State].
const (
	// SessionLive: renewed within the last two heartbeat intervals.
	SessionLive = status.Live
	// SessionLate: not renewed for two heartbeat intervals or more; it
	// lapses when its TTL passes.
	SessionLate = status.Late
	// SessionDraining: the server is draining and the peer has been told.
	SessionDraining = status.Draining
)

// SessionInfo describes a session for hooks and the status page: its
// Contract, agreed Version, the Peer its hello claims, the Identity that
// holds it (its verified certificate's, "" without mutual TLS), its State
// ([SessionLive], [SessionLate], [SessionDraining]), its Age and Idle time
// on the server's monotonic clock and Since when it was opened. In JSON,
// durations are Go duration strings and Since is RFC 3339. An alias of
// framework/internal/status's Session, whose wire form and bounds that
// package keeps.
type SessionInfo = status.Session

// ClientStatus describes a client of the component, for its status page.
type ClientStatus struct {
	Contract string `json:"contract"`
	Version  string `json:"version"`
	// Server is the component the client calls.
	Server    string           `json:"server"`
	Ready     bool             `json:"ready"`
	Endpoints []EndpointStatus `json:"endpoints"`
	// Blocked is how many calls wait for a compatible peer now, and
	// LongestBlocked how long the oldest of them has waited.
	Blocked        int                `json:"blocked"`
	LongestBlocked handshake.Duration `json:"longestBlocked"`
}

// Status returns the client's status.
func (c *Client) Status() ClientStatus {
	n, longest := c.blocked.Snapshot(c.cfg.Clock.Now())
	return ClientStatus{
		Contract: c.contract.Name(), Version: c.contract.Version(), Server: c.contract.Server(),
		Ready: c.Ready() == nil, Endpoints: c.Endpoints(),
		Blocked: n, LongestBlocked: handshake.Duration(longest.Round(time.Millisecond)),
	}
}

// AddClient shows a client of this component on the server's status page,
// adds its endpoints and blocked calls to the server's metrics, and makes
// /readyz wait for it: a component is ready only when its own peers are.
func (s *Server) AddClient(c *Client) {
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	s.AddReadinessCheck(c.contract.Name()+" client", c.Ready)
	if m := s.cfg.Metrics; m != nil {
		m.WatchClient(c)
	}
}

// Status returns the server's status.
func (s *Server) Status() ServerStatus {
	notReady := s.ready.Missing()
	st := ServerStatus{
		Component: s.cfg.Component, Instance: s.cfg.Instance, Release: s.cfg.Release,
		Now: s.cfg.Clock.Now().Round(time.Millisecond).UTC(), Draining: s.Draining(), Ready: len(notReady) == 0,
		NotReady: strings.Join(notReady, "; "), Contracts: map[string][]string{}, Served: []ServedVersion{},
		Sessions: s.Sessions(), Topics: s.TopicStats(), Clients: []ClientStatus{},
	}
	st.SessionCount = len(st.Sessions)
	st.PeersByVersion = status.PeersByVersion(st.Sessions)
	if st.Topics == nil {
		st.Topics = []TopicStats{}
	}
	s.mu.RLock()
	for _, name := range sortedKeys(s.contracts) {
		sc := s.contracts[name]
		vs := sortedKeys(sc.versions)
		st.Contracts[name] = vs
		for _, v := range vs {
			c := sc.versions[v].contract
			st.Served = append(st.Served, ServedVersion{Contract: name, Version: v, Fingerprint: c.Fingerprint(), Client: c.Client()})
		}
	}
	clients := append([]*Client(nil), s.clients...)
	s.mu.RUnlock()
	for _, c := range clients {
		st.Clients = append(st.Clients, c.Status())
	}
	sortByContract(st.Clients)
	return st
}

// sortByContract orders clients' statuses by their contract.
func sortByContract(clients []ClientStatus) {
	slices.SortStableFunc(clients, func(a, b ClientStatus) int { return strings.Compare(a.Contract, b.Contract) })
}

// serveStatus answers GET /lockstep/status: JSON for programs, the default,
// and a page a person reads for a browser (Accept: text/html).
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	st := s.Status()
	st.bound()
	if err := status.Serve(w, r, st); err != nil {
		s.fail(w, Errorf(CodeInternal, "%v", err))
	}
}

// ClientStatusConfig configures [NewClientStatusHandler].
type ClientStatusConfig struct {
	// Component, Instance and Release name the process on its status, as
	// a server's config does for a server; Instance defaults to 16 random
	// hex digits.
	Component, Instance, Release string
	// Clients are the process's clients: shown on its status with their
	// endpoints and blocked calls, added to its metrics, and waited on by
	// /readyz.
	Clients []*Client
	// Metrics are served at /metrics, with the clients' endpoint and
	// blocked-call gauges added. Give the same metrics' observer to the
	// clients (ClientConfig.Observer = m.Client()) so their handshakes and
	// calls are counted too. Nil: /metrics is not served.
	Metrics *Metrics
	// Clock is the clock of the status's "now"; default the real one.
	Clock clockwork.Clock
}

// NewClientStatusHandler returns what a [Server] serves of itself, for a
// process that only calls (an agent, a controller with no API of its own):
// GET /lockstep/status (the same JSON and page, so lockstepctl status reads
// it; no contracts served, no sessions), /metrics, /healthz, /livez, and
// /readyz, ready when every client is. It is a handler, not a server: it
// listens on nothing and authenticates no one, so there is no peer to warn
// about; mount it on the process's own HTTP server, behind whatever guards
// that server's other debug endpoints.
func NewClientStatusHandler(cfg ClientStatusConfig) http.Handler {
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Instance == "" {
		cfg.Instance = randomID(8)
	}
	clients := slices.Clone(cfg.Clients)
	p := status.ClientProcess{NotReady: func() []string {
		var missing []string // as a server's readiness check for an added client says
		for _, c := range clients {
			if err := c.Ready(); err != nil {
				missing = append(missing, c.contract.Name()+" client: "+err.Error())
			}
		}
		return missing
	}}
	p.Status = func() any {
		notReady := p.NotReady()
		st := ServerStatus{
			Component: cfg.Component, Instance: cfg.Instance, Release: cfg.Release,
			Now: cfg.Clock.Now().Round(time.Millisecond).UTC(), Ready: len(notReady) == 0, NotReady: strings.Join(notReady, "; "),
			Contracts: map[string][]string{}, Served: []ServedVersion{}, PeersByVersion: map[string]map[string]int{},
			Sessions: []SessionInfo{}, Topics: []TopicStats{}, Clients: make([]ClientStatus, 0, len(clients)),
		}
		for _, c := range clients {
			st.Clients = append(st.Clients, c.Status())
		}
		sortByContract(st.Clients)
		return st
	}
	if m := cfg.Metrics; m != nil {
		for _, c := range clients {
			m.WatchClient(c)
		}
		p.Metrics = m.Handler()
	}
	return p.Handler(PathMetrics)
}

// PathMetrics is where a server serves its Prometheus metrics by default.
const PathMetrics = "/metrics"

// UnknownLabel is the one label value under which a server counts every
// contract, version and method it does not serve, and a client every
// refusal reason it does not know: metric labels come only from what the
// process itself declares, never from what a request or an answer names,
// so that requests to made-up paths (unauthenticated ones included) add no
// series (docs/security.md). No contract, version or method name can take
// this value.
const UnknownLabel = metrics.UnknownLabel

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
type Metrics struct{ set *metrics.Set }

// NewMetrics creates lockstep's collectors and registers them with reg.
// A nil reg means a new registry of its own, with Go runtime and process
// collectors beside lockstep's. [Metrics.Handler] serves reg when it is
// also a [prometheus.Gatherer] (a *prometheus.Registry is).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{metrics.New(reg, limitNames(allLimits), limitNames(replayLimits))}
}

// limitNames are the label values of limits.
func limitNames(ls []limit) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

// Registerer returns the registry the metrics are registered with, so a
// binary can add its own collectors and have them served beside them.
func (m *Metrics) Registerer() prometheus.Registerer { return m.set.Registerer() }

// Handler serves the metrics in the Prometheus exposition format; it
// answers 404 when the registerer given to [NewMetrics] cannot be gathered.
func (m *Metrics) Handler() http.Handler { return m.set.Handler() }

// Server returns the observer that records a server's handshakes and calls;
// a server given these metrics in ServerConfig.Metrics uses it itself.
func (m *Metrics) Server() ServerObserver { return m.set.Server() }

// Client returns the observer to set as ClientConfig.Observer.
func (m *Metrics) Client() ClientObserver { return m.set.Client() }

// Watch adds srv's sessions and topics to the gauges read at scrape time.
// A server calls it for the Metrics of its config.
func (m *Metrics) Watch(srv *Server) {
	m.set.WatchServer(&metrics.Server{Serves: srv.serves, Sessions: srv.metricsSessions, Topics: srv.topics.Gauges})
}

// WatchClient adds c's endpoints and blocked calls to the gauges read at
// scrape time; [Server.AddClient] calls it.
func (m *Metrics) WatchClient(c *Client) {
	m.set.WatchClient(&metrics.Client{Contract: c.contract.Name(),
		EndpointStates: func() []string {
			var states []string
			for _, e := range c.Endpoints() {
				states = append(states, e.State)
			}
			return states
		},
		Blocked: func() int { n, _ := c.blocked.Snapshot(c.cfg.Clock.Now()); return n },
	})
}

// collectors returns m's collectors, nil for no metrics (m nil), whose
// counting methods then count nothing.
func (m *Metrics) collectors() *metrics.Set {
	if m == nil {
		return nil
	}
	return m.set
}

func (m *Metrics) sessionLapsed(contract string) { m.collectors().SessionLapsed(contract) }

// limitRefused counts a refusal for going over l (m may be nil: no metrics).
func (m *Metrics) limitRefused(l limit) { m.collectors().LimitRefused(string(l)) }

// idempotencyEvicted counts a finished idempotency record forgotten
// before its window ended, to keep within l (m may be nil: no metrics).
func (m *Metrics) idempotencyEvicted(l limit) { m.collectors().IdempotencyEvicted(string(l)) }

// onBehalfEntry counts an entry asked on behalf of a client component
// (m may be nil: no metrics).
func (m *Metrics) onBehalfEntry(kind EntryKind, contract, outcome string) {
	m.collectors().OnBehalfEntry(string(kind), contract, outcome)
}

// teeServerObserver sends a server's events to two observers.
type teeServerObserver = metrics.TeeServer

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

// metricsSessions are s's live sessions as the gauges count them.
func (s *Server) metricsSessions() []metrics.Session {
	snap := s.sessions.Snapshot()
	out := make([]metrics.Session, 0, len(snap))
	for _, sess := range snap {
		out = append(out, metrics.Session{Contract: sess.contract, Version: sess.version})
	}
	return out
}
