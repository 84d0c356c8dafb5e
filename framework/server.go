package framework

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/internal/admit"
	"github.com/lockstep-dev/lockstep/framework/internal/body"
	"github.com/lockstep-dev/lockstep/framework/internal/conns"
	"github.com/lockstep-dev/lockstep/framework/internal/dispatch"
	"github.com/lockstep-dev/lockstep/framework/internal/drain"
	"github.com/lockstep-dev/lockstep/framework/internal/lifecycle"
	"github.com/lockstep-dev/lockstep/framework/internal/ready"
	"github.com/lockstep-dev/lockstep/framework/internal/replay"
	"github.com/lockstep-dev/lockstep/framework/internal/sessions"
	"github.com/lockstep-dev/lockstep/framework/internal/topics"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Server serves contracts to their client components: it answers
// handshakes, keeps sessions, and dispatches calls to handlers registered
// with [HandleUnary] and [HandleBatch]. One Server serves every contract a
// component is the server of, on one listener.
type Server struct {
	cfg    ServerConfig
	router chi.Router
	start  time.Time // monotonic origin for session clocks

	// mu guards what is registered before the server starts (contracts,
	// clients, metricsRoute), what Serve sets up (http, conns, listener),
	// and orders every move of life with them.
	mu sync.RWMutex
	// life is where the server is in its life (package lifecycle); it
	// moves only under mu, and is read without it on every request's
	// path (Draining).
	life      *lifecycle.Life
	contracts map[string]*servedContract // by contract name
	conns     *conns.Tracker
	listener  *conns.GatedListener // what Serve serves on, for the drain to stop
	clients   []*Client            // shown on the status page (AddClient)
	// topics are the topics the server holds, and those it serves at an
	// earlier version from their current form's writer
	// ([ForkServedTopic]); its lock is a leaf, taken under mu or alone.
	topics topics.Table
	// metricsRoute, if set by Handle, serves /metrics instead of Metrics.
	metricsRoute http.Handler

	sessions *sessionTable
	// ready holds the readiness checks (AddReadinessCheck) and answers
	// /readyz.
	ready  *ready.Checks
	limits *peerLimits
	// gate admits every entry (admission.go).
	gate *admit.Gate[*session]
	// replays records keyed calls' answers (see dispatch); calls serves
	// them once per key, and takes batch calls and multi-calls apart.
	replays  *replay.Store
	calls    *dispatch.Server
	inFlight atomic.Int64
	// lastArrival is when the last call arrived while draining, on the
	// server's clock.
	lastArrival atomic.Int64
	// drainWake is signalled when something a drain waits for may have
	// happened: a call ended or a session went (see [drain.Phase.Drained]).
	drainWake chan struct{}
	// lifeMu orders the moves that have work to do on entering their
	// state (telling watchers of a drain, stopping them and the session
	// clock) with that work, so every caller of beginDrain or stop
	// returns once it is done, whoever made the move. Taken before mu.
	lifeMu sync.Mutex
	// loopDone is nil until the session clock starts (the move to
	// lifecycle.Running), then closed when its expiry loop ends.
	loopDone chan struct{}
	http     *http.Server
	// watchWG counts the goroutines sending on watch streams.
	watchWG sync.WaitGroup
}

// servedContract is one contract name and the versions of it served.
type servedContract struct {
	name     string
	versions map[string]*servedVersion // by version string
}

type servedVersion struct {
	contract *Contract
	methods  map[string]*methodHandler
}

// NewServer checks cfg, fills its defaults, and returns a server with no
// contracts yet; register handlers, then call [Server.Serve].
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("lockstep: server config: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		start:     cfg.Clock.Now(),
		contracts: map[string]*servedContract{},
		replays:   replay.New(cfg.IdempotencyWindow, cfg.IdempotencyKeysPerPeer, cfg.IdempotencyMaxBytes),
		life:      lifecycle.New(),
		drainWake: make(chan struct{}, 1),
	}
	s.replays.Evicted = func(l string) { cfg.Metrics.idempotencyEvicted(limit(l)) }
	s.limits = newPeerLimits(cfg.Limits, cfg.MaxSessions, cfg.Metrics)
	s.calls = &dispatch.Server{Replays: s.replays, Now: cfg.Clock.Now, Refused: cfg.Metrics.limitRefused,
		Peers: s.limits, MaxInFlight: cfg.MaxInFlightPerSession, Logger: cfg.Logger}
	s.sessions = newSessionTable(s.limits)
	s.ready = &ready.Checks{Draining: s.Draining, RequirePeers: cfg.RequirePeers, Sessions: s.sessions.CountFor}
	s.gate = newGate(s)
	s.router = s.routes()
	if cfg.Metrics != nil {
		cfg.Metrics.Watch(s)
	}
	return s, nil
}

// Component returns the server's component name.
func (s *Server) Component() string { return s.cfg.Component }

// Instance returns the server's instance id.
func (s *Server) Instance() string { return s.cfg.Instance }

// Release returns the server's release.
func (s *Server) Release() string { return s.cfg.Release }

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Post(protocol.PathHandshake, s.gate.ServeHello)
	r.Delete(protocol.PathSession, s.gate.ServeClose)
	r.Post(protocol.PathHeartbeat, s.gate.ServeHeartbeat)
	r.Get(protocol.PathStatus, s.gate.OperatorOnly(http.HandlerFunc(s.serveStatus)).ServeHTTP)
	r.Post(protocol.PathPrefix+"{contract}/{version}/{method}", s.serveCall)
	r.Get(protocol.PathPrefix+"{contract}/{version}/watch/{topic}", s.serveWatch)
	r.Post(protocol.PathPrefix+"{contract}/{version}/topics/{topic}", s.serveTopicWrite)
	r.Get("/healthz", ready.Live)
	r.Get("/livez", ready.Live)
	r.Get("/readyz", s.ready.ServeHTTP)
	if s.cfg.Metrics != nil {
		r.Get(PathMetrics, s.gate.OperatorOnly(http.HandlerFunc(s.serveMetrics)).ServeHTTP)
	}
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, s.routingRefusal(r, Errorf(CodeNotFound, "no such path: %s %s", r.Method, r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, s.routingRefusal(r, Errorf(CodeNotFound, "%s is not served at %s", r.Method, r.URL.Path)))
	})
	return r
}

// servedVersionLocked returns the record of a contract version the server
// serves, creating it; what names what is being registered, for the panic
// that a late registration gets. s.mu must be held.
func (s *Server) servedVersionLocked(c *Contract, what string) *servedVersion {
	if s.life.State() != lifecycle.Registering {
		panic("lockstep: " + what + " must be registered before the server starts or closes")
	}
	if c.Server() != s.cfg.Component {
		panic(fmt.Sprintf("lockstep: contract %s is served by %s, not %s", c.Name(), c.Server(), s.cfg.Component))
	}
	sc := s.contracts[c.Name()]
	if sc == nil {
		sc = &servedContract{name: c.Name(), versions: map[string]*servedVersion{}}
		s.contracts[c.Name()] = sc
	}
	sv := sc.versions[c.Version()]
	if sv == nil {
		sv = &servedVersion{contract: c, methods: map[string]*methodHandler{}}
		sc.versions[c.Version()] = sv
	} else if sv.contract.Fingerprint() != c.Fingerprint() {
		panic(fmt.Sprintf("lockstep: contract %s %s registered twice with different fingerprints", c.Name(), c.Version()))
	}
	return sv
}

// register adds a contract version to the server; it panics on setup
// mistakes, which are programming errors.
func (s *Server) register(c *Contract, method string, h *methodHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.servedVersionLocked(c, "handlers")
	if _, dup := sv.methods[method]; dup {
		panic(fmt.Sprintf("lockstep: %s %s method %s registered twice", c.Name(), c.Version(), method))
	}
	sv.methods[method] = h
}

// Handle serves h at pattern (chi syntax, e.g. "/metrics") beside the
// lockstep protocol, so a binary serves its own routes through [Server.Serve]
// and they are drained with it. Patterns under /lockstep/ and the health
// paths are the server's own. Under mutual TLS they are served to operator
// identities only, like the status page (docs/security.md). It panics on
// setup mistakes, and once the server has started.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.route(pattern, h, true)
}

// route adds a route; operator says whether it is a binary's own, served
// under mutual TLS only to operator identities. Plain-serving routes
// ([Server.ServePlain]) are not: their callers are the contract's
// clients, admitted by the plain handler itself.
func (s *Server) route(pattern string, h http.Handler, operator bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life.State() != lifecycle.Registering {
		panic("lockstep: routes must be added before the server starts or closes")
	}
	if strings.HasPrefix(pattern, protocol.PathPrefix) || pattern == "/healthz" || pattern == "/livez" || pattern == "/readyz" {
		panic(fmt.Sprintf("lockstep: %s is served by the runtime itself", pattern))
	}
	if !operator {
		s.router.Handle(pattern, h)
		return
	}
	if pattern == PathMetrics && s.cfg.Metrics != nil {
		s.metricsRoute = h // the binary's own metrics replace the default (guarded as the route is)
		return
	}
	s.router.Handle(pattern, s.gate.OperatorOnly(h))
}

// AddReadinessCheck adds a named check to /readyz; typically a client's
// [Client.Ready], so a component is ready only when its own peers are.
func (s *Server) AddReadinessCheck(name string, check func() error) { s.ready.Add(name, check) }

// checkComplete verifies that every method of every registered contract
// version has a handler and every topic it declares is served, so a
// missing one fails at start instead of at the first call or watch.
func (s *Server) checkComplete() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, name := range sortedKeys(s.contracts) {
		for _, ver := range sortedKeys(s.contracts[name].versions) {
			sv := s.contracts[name].versions[ver]
			for _, m := range sv.contract.Methods() {
				mh, ok := sv.methods[m]
				if !ok {
					errs = append(errs, fmt.Errorf("%s %s: method %s has no handler", name, ver, m))
					continue
				}
				if mh.forkOf != nil {
					target := s.contracts[name].versions[mh.forkOf.Version()]
					if target == nil || target.methods[m] == nil {
						errs = append(errs, fmt.Errorf("%s %s: method %s is forked to %s, which has no handler for it", name, ver, m, mh.forkOf.Version()))
					}
				}
			}
			errs = append(errs, s.unservedTopicsLocked(sv)...)
		}
	}
	for _, f := range s.topics.Waiting() {
		errs = append(errs, fmt.Errorf("%s %s: topic %s is forked from %s, which does not serve it: serve it with ServeTopic",
			f.Contract, f.Old, f.Topic, f.Current))
	}
	for _, name := range s.cfg.RequirePeers {
		if _, ok := s.contracts[name]; !ok {
			errs = append(errs, fmt.Errorf("RequirePeers names %s, which this server does not serve", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lockstep: %w", err)
	}
	return nil
}

// unservedTopicsLocked returns an error for each topic sv's contract
// declares that s does not serve at that version: a watcher of it would
// be refused for as long as the server runs. s.mu must be held.
func (s *Server) unservedTopicsLocked(sv *servedVersion) []error {
	var errs []error
	c := sv.contract
	for _, t := range c.Topics() {
		if s.topics.Get(c.Name(), c.Version(), t) != nil || s.topics.Forked(c.Name(), c.Version(), t) {
			continue // a fork waiting for its writer is named as such
		}
		decl, _ := c.Topic(t)
		how := "ServeTopic, or ForkTopic from a later version's writer (the generated RegisterFork does)"
		if decl.Writer == handshake.RoleClient {
			how = "ServeClientTopic"
		}
		errs = append(errs, fmt.Errorf("%s %s: topic %s is not served: serve it with %s", c.Name(), c.Version(), t, how))
	}
	return errs
}

// begin checks the registered handlers ([Server.checkComplete]) and, the
// first time they pass, moves the server to lifecycle.Running and starts the
// session clock: the expiry loop, which [Server.stop] ends and waits for.
// A server that began to drain before it started never starts it.
func (s *Server) begin() error {
	if err := s.checkComplete(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life.Move(lifecycle.Running) {
		s.loopDone = make(chan struct{})
		go s.expiryLoop(s.loopDone)
	}
	return nil
}

// ServeHTTP serves the lockstep protocol and the health endpoints, for
// embedding in another server. [Server.Serve] is preferred: only it can
// close connections at the end of a drain. During a drain every answer
// closes its connection (health probes, metrics scrapes and the binary's
// own routes too), so a prober asking more often than DrainQuiet does not
// keep a connection busy that the drain's second phase waits on.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tc := conns.TrackedOf(r.Context()); tc != nil && !tc.Serve(r) {
		conns.AbandonRefused(w, r, tc) // the drain has answered it (see package conns)
		return
	}
	if s.life.Draining() {
		w.Header().Set("Connection", "close")
	}
	if err := s.chargeConn(r); err != nil {
		// Over the identity's share of connections: this answer closes
		// the connection (an HTTP/2 one with a GOAWAY: net/http reads
		// Connection: close so); its other streams, uncharged too, are
		// refused the same way.
		s.gate.CloseAfterRefusal(w, r)
		s.refuse(w, r, err)
		return
	}
	if body.OnTheWire(r) {
		// Every body must arrive within Limits.BodyReadTimeout from its
		// headers. net/http sets no deadline on a body, and discards one
		// a handler left unread before it answers: a peer that declared
		// a body and never sent it held its connection and a goroutine
		// for good, unanswered, on any path (/healthz reads nothing, and
		// needs no certificate). admit.Gate.ReadBodyLimit and the refusals set the
		// deadline again for what they read; net/http clears it once a
		// body has been read to its end.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.Limits.BodyReadTimeout))
	}
	s.router.ServeHTTP(w, r)
}

// chargeConn charges the connection r arrived on to r's identity, once
// (Limits.ConnsPerPeer, see framework/internal/limits/conns.go): under mutual TLS, for a
// request with a client certificate that verifies. A request without one
// charges nothing here; its entry refuses it, or serves it if open to
// all (health). A connection the identity's share refuses stays
// uncharged, and the answer closes it.
func (s *Server) chargeConn(r *http.Request) error {
	if s.cfg.MTLS == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil
	}
	ch := connChargeOf(r.Context())
	if ch == nil || ch.Charged() {
		return nil
	}
	p, err := s.cfg.MTLS.verifyCached(r.TLS.PeerCertificates)
	if err != nil || !p.Authenticated {
		return nil
	}
	return ch.ChargeTo(p.Identity.String())
}

// Start checks the registered handlers and starts the session clock without
// serving; for use with [Server.ServeHTTP]. Serve calls it itself.
func (s *Server) Start() error { return s.begin() }

// Serve serves on l until [Server.Shutdown] or [Server.Close]; it returns nil
// after a graceful shutdown. With ServerConfig.TLSConfig it serves TLS;
// plain HTTP is refused on a non-loopback address unless Insecure is set.
func (s *Server) Serve(l net.Listener) error {
	if err := s.begin(); err != nil {
		return err
	}
	if s.cfg.TLSConfig == nil && !s.cfg.Insecure && !isLoopback(l.Addr()) {
		return fmt.Errorf("lockstep: refusing plain HTTP on %s: set TLSConfig, or Insecure to allow it", l.Addr())
	}
	if s.cfg.MTLS == nil {
		s.cfg.Logger.Warn("lockstep: peers are not authenticated: without mutual TLS (ServerConfig.MTLS) any peer that reaches this port may speak as any client component",
			"addr", l.Addr().String(), "tls", s.cfg.TLSConfig != nil)
	}
	tracker := conns.NewTracker(s.cfg.Clock)
	hs := &http.Server{
		Handler:   s,
		ConnState: tracker.Track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return withConnCharge(tracker.ConnContext(ctx, c), c)
		},
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         s.cfg.TLSConfig,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	// Besides HTTP/1.1 (and HTTP/2 over TLS), accept HTTP/2 without TLS
	// from clients that speak it with prior knowledge (h2c): a transport
	// can then multiplex every call over a few connections instead of one
	// connection per concurrent call.
	hs.Protocols = new(http.Protocols)
	hs.Protocols.SetHTTP1(true)
	hs.Protocols.SetHTTP2(true)
	hs.Protocols.SetUnencryptedHTTP2(true)
	s.mu.Lock()
	if s.http != nil {
		s.mu.Unlock()
		return errors.New("lockstep: Serve called twice")
	}
	if s.life.State() >= lifecycle.Closing {
		// Shutdown or Close came first: release the address at once.
		s.mu.Unlock()
		_ = l.Close()
		return nil
	}
	gl := conns.NewGatedListener(l)
	s.http, s.conns, s.listener = hs, tracker, gl
	s.mu.Unlock()
	// The connection bounds lie above the gate, so a drain's last accepts
	// are bounded too, and beneath TLS, so a refused connection costs no
	// handshake.
	cl := newConnLimiter(gl, s.cfg.Limits, s.cfg.Metrics)
	var err error
	if s.cfg.TLSConfig != nil {
		err = hs.ServeTLS(cl, "", "")
	} else {
		err = hs.Serve(cl)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ListenAndServe listens on addr and serves; see [Server.Serve].
func (s *Server) ListenAndServe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Metrics returns the server's metrics, nil when ServerConfig.NoMetrics
// is set; give them to the process's clients (ClientConfig.Observer =
// srv.Metrics().Client()) so /metrics shows both sides.
func (s *Server) Metrics() *Metrics { return s.cfg.Metrics }

// serveMetrics answers GET /metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	h := s.metricsRoute
	s.mu.RUnlock()
	if h == nil {
		h = s.cfg.Metrics.Handler()
	}
	h.ServeHTTP(w, r)
}

// Draining reports whether the server is shutting down.
func (s *Server) Draining() bool { return s.life.Draining() }

// DrainStarted returns a channel closed when the server begins to drain
// ([Server.Shutdown]), for work that must hand over before the drain ends,
// e.g. a replica giving up a lease so another takes over at once.
func (s *Server) DrainStarted() <-chan struct{} { return s.life.DrainStarted() }

// Shutdown drains and stops the server. First it takes no new sessions and
// answers every call with the draining header (calls already running
// finish; calls arriving now are refused unprocessed so clients resend them
// elsewhere) until every client has closed its session (its acknowledgement)
// or it lapsed, and no call has arrived for DrainQuiet, or DrainTimeout
// passes; then it closes the listener and waits for in-flight calls. ctx
// bounds the whole. On a server that has already stopped (by Shutdown or
// Close) it returns nil at once, rather than wait out a drain with
// nothing left to drain.
func (s *Server) Shutdown(ctx context.Context) error {
	select {
	case <-s.life.Stopped():
		return nil
	default:
	}
	s.beginDrain()
	drain.Phase{
		Clock: s.cfg.Clock, Timeout: s.cfg.DrainTimeout, Quiet: s.cfg.DrainQuiet, Now: s.now,
		LastArrival: &s.lastArrival, InFlight: &s.inFlight, Sessions: s.sessions.Len, Wake: s.drainWake,
	}.Wait(ctx)
	if ctx.Err() != nil {
		s.stop()
		return s.closeHTTP()
	}
	s.mu.RLock()
	tracker, gl := s.conns, s.listener
	s.mu.RUnlock()
	drain.Connections(ctx, tracker, gl, s.cfg.Component, s.cfg.DrainQuiet)
	var err error
	if hs := s.beginClosing(); hs != nil {
		err = hs.Shutdown(ctx)
	}
	s.mu.RLock()
	tracker = s.conns // a Serve begun during the drain set it
	s.mu.RUnlock()
	if err == nil && tracker != nil {
		tracker.WaitRefusals() // every connection is closed: they end at once
	}
	s.stop()
	return err
}

// beginClosing moves the server to lifecycle.Closing (unless it has stopped
// already), so a Serve that has not begun yet returns at once, and returns
// the HTTP server of a Serve that has.
func (s *Server) beginClosing() *http.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.life.Move(lifecycle.Closing)
	return s.http
}

// Close stops the server at once, without draining: connections are cut and
// calls in flight fail. It is what a crash looks like to peers.
func (s *Server) Close() error {
	s.beginDrain()
	s.stop()
	return s.closeHTTP()
}

func (s *Server) closeHTTP() error {
	hs := s.beginClosing()
	if hs == nil {
		return nil
	}
	return hs.Close()
}

// beginDrain moves the server to lifecycle.Draining, from which it takes no
// new sessions, and ends every watch stream with a closing frame; called
// again, it only restarts the drain's quiet period.
func (s *Server) beginDrain() {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.lastArrival.Store(s.now())
	s.mu.Lock()
	moved := s.life.Move(lifecycle.Draining)
	s.mu.Unlock()
	if moved {
		s.topics.Drain()
	}
}

// stop moves the server to lifecycle.Stopped: it closes every watch stream's
// connection and waits for their goroutines and for the session clock's
// loop, if it started.
func (s *Server) stop() {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	s.mu.Lock()
	moved := s.life.Move(lifecycle.Stopped)
	loopDone := s.loopDone
	s.mu.Unlock()
	if !moved {
		return
	}
	s.topics.Stop()
	s.watchWG.Wait()
	if loopDone != nil {
		<-loopDone
	}
}

// wakeDrain tells a waiting Shutdown to look at [drain.Phase.Drained] again.
func (s *Server) wakeDrain() {
	select {
	case s.drainWake <- struct{}{}:
	default:
	}
}

// callEnded counts a call out of the server's in-flight calls.
func (s *Server) callEnded() {
	s.inFlight.Add(-1)
	s.wakeDrain()
}

// now returns nanoseconds since the server started, on its monotonic clock.
func (s *Server) now() int64 { return int64(s.cfg.Clock.Since(s.start)) }

// expiryLoop runs the session clock (sessions.Expiry) until the server
// stops: every half heartbeat it sweeps the idempotency records and
// closes the sessions that lapsed, with no call or heartbeat within the
// TTL and none in flight; then it closes done.
func (s *Server) expiryLoop(done chan struct{}) {
	sessions.Expiry[*session, *Peer]{Table: s.sessions, Clock: s.cfg.Clock, Heartbeat: s.cfg.Heartbeat, TTL: s.cfg.SessionTTL,
		Now: s.now, Stop: s.life.Stopped(),
		Sweep:  func() { s.replays.Sweep(s.cfg.Clock.Now()) },
		Busy:   func(sess *session) bool { return sess.inFlight.Load() > 0 },
		Lapsed: s.lapsed,
	}.Run(done)
}

// lapsed ends a session the session clock removed: logged, counted, and
// its peer lost.
func (s *Server) lapsed(sess *session) {
	s.cfg.Logger.Info("lockstep: session lapsed", "contract", sess.contract,
		"peer", sess.peer.Component, "instance", sess.peer.Instance)
	s.cfg.Metrics.sessionLapsed(sess.contract)
	s.peerLost(sess)
}

func (s *Server) info(sess *session) SessionInfo {
	now := s.now()
	idle := time.Duration(now - sess.lastSeen.Load())
	state := SessionLive
	switch {
	case s.life.Draining() && sess.drainNotified.Load():
		state = SessionDraining
	case idle >= 2*s.cfg.Heartbeat:
		state = SessionLate
	}
	var identity string
	if sess.owner != nil && sess.owner.Authenticated {
		identity = sess.owner.Identity.String()
	}
	return SessionInfo{
		Contract: sess.contract, Version: sess.version, Peer: sess.peer, Identity: identity, State: state,
		Age: time.Duration(now - sess.createdAt), Idle: idle, Since: s.start.Add(time.Duration(sess.createdAt)),
	}
}

func (s *Server) peerLost(sess *session) {
	defer s.wakeDrain() // a drain may wait for this session
	s.topics.PeerLost(sess.contract, sess.peer.Component, sess.peer.Instance)
	if s.cfg.OnPeerLost != nil {
		s.cfg.OnPeerLost(s.info(sess))
	}
}

// RequestResync asks the sessions of a client instance to send their full
// state again; the request rides the next heartbeat answer. It reports
// whether such a session exists.
func (s *Server) RequestResync(contract, instance string) bool {
	sess := s.sessions.Of(sessionKey(contract, instance))
	if sess == nil {
		return false
	}
	sess.resync.Store(true)
	return true
}

// Sessions lists the live sessions, sorted by contract and peer instance.
func (s *Server) Sessions() []SessionInfo {
	all := s.sessions.Snapshot()
	out := make([]SessionInfo, 0, len(all))
	for _, sess := range all {
		out = append(out, s.info(sess))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Contract != out[j].Contract {
			return out[i].Contract < out[j].Contract
		}
		return out[i].Peer.Instance < out[j].Peer.Instance
	})
	return out
}

// offers returns what the server speaks of a contract.
func (sc *servedContract) offers() []handshake.Offer {
	out := make([]handshake.Offer, 0, len(sc.versions))
	for _, v := range sortedKeys(sc.versions) {
		out = append(out, sc.versions[v].contract.Offer())
	}
	return out
}

func (s *Server) lookup(contract string) *servedContract {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.contracts[contract]
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// Run serves on ServerConfig.Addr until ctx ends, then drains
// ([Server.Shutdown]) and returns: a binary's main is
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	if err := srv.Run(ctx); err != nil { log.Fatal(err) }
//
// It returns an error when the server cannot listen or serve, or when the
// drain fails; nil after a graceful drain. The drain is bounded by
// DrainTimeout plus [RunShutdownGrace] for calls still in flight. Wrapped
// in [Runnable], it is a controller-runtime manager.Runnable.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Addr == "" {
		return errors.New("lockstep: Server.Run needs ServerConfig.Addr")
	}
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("lockstep: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	select {
	case err := <-served:
		// Serve failed (or Shutdown came from elsewhere): nothing to drain.
		return err
	case <-ctx.Done():
	}
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DrainTimeout+RunShutdownGrace)
	defer cancel()
	err = s.Shutdown(drain)
	return errors.Join(err, <-served)
}

// RunShutdownGrace is how long [Server.Run] waits, after a drain's first
// phase, for calls still in flight before it cuts them.
const RunShutdownGrace = 10 * time.Second

// Runnable adapts a Run method to anything that starts components with
// Start(ctx) error and expects it to block until ctx ends, such as
// controller-runtime's manager.Runnable:
//
//	mgr.Add(framework.Runnable(srv.Run))
//
// (Server already has a Start of its own, for [Server.ServeHTTP] users.)
type Runnable func(ctx context.Context) error

// Start runs r.
func (r Runnable) Start(ctx context.Context) error { return r(ctx) }

// Healthz is [Server.Ready] in the shape of controller-runtime's
// healthz.Checker, for a manager's readiness endpoint:
//
//	mgr.AddReadyzCheck("lockstep", srv.Healthz)
func (s *Server) Healthz(*http.Request) error { return s.Ready() }

// Ready returns nil when the server is ready: not draining, every contract
// in RequirePeers has a live session, and every readiness check passes.
// Otherwise the error says what is missing.
func (s *Server) Ready() error { return s.ready.Err() }
