package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/clienthttp"
	"github.com/lockstep-dev/lockstep/framework/internal/route"
	"github.com/lockstep-dev/lockstep/framework/internal/watch"
	"github.com/lockstep-dev/lockstep/handshake"
)

// ClientConfig configures a [Client]. Zero values take the defaults named on
// each field.
type ClientConfig struct {
	// Component is the client's component name (required); it must be the
	// contract's client.
	Component string
	// Release is the binary's own version (required).
	Release string
	// Instance names this client instance; default: 16 random hex digits. A
	// node simulator gives each simulated node its own client and instance.
	Instance string
	// PeerRelease optionally constrains the server's release.
	PeerRelease string

	// Endpoints are the peer's base URLs, e.g. "https://10.0.0.7:8443";
	// Source, if set, is used instead. A Source that is a
	// [ReadinessSource] also says when an endpoint's server is back, and
	// the client then reconnects at once rather than at its next probe.
	Endpoints []string
	Source    EndpointSource

	// Transport carries every request; default [NewTransport](TLSConfig).
	// Tests inject one to cut, delay and observe traffic. A transport that
	// wraps another should forward CloseIdleConnections: the client calls
	// it when a server drains or goes away, so no later call meets a pooled
	// connection that server closed.
	Transport http.RoundTripper
	// TLSConfig is used by the default transport.
	TLSConfig *tls.Config
	// Insecure allows plain http to non-loopback endpoints.
	Insecure bool

	// Interceptors wrap every call, first outermost.
	Interceptors []Interceptor
	// Propagator, when set, carries the trace context of the context
	// given to [TopicPublisher.Set] with the write, and hands a watched
	// change's to [Informer.DeliveryContext] ([Propagator]).
	Propagator Propagator
	// ReadyTimeout, if set, bounds how long a call waits for a compatible
	// peer, separately from its context.
	ReadyTimeout time.Duration
	// HandshakeWait is how long an incompatible server may hold a refusal
	// open (?wait=) so the client learns of its replacement at once;
	// default 30s.
	HandshakeWait time.Duration
	// Backoff shapes reconnect delays; default 5ms growing by 1.6 to
	// 100ms, ±20 % jitter.
	Backoff Backoff
	// MaxResponseBytes bounds answers; default 16 MiB.
	MaxResponseBytes int64
	// OnResync is called, on its own goroutine, when a server asks this
	// client to send its full state again.
	OnResync func()
	// Fork lists earlier contract versions the client also speaks (fork
	// mode), with their conversions: endpoints that agree on one of them are
	// called in that version, and their topics watched in that version's
	// form, converted up. The versions a contract derives from compatibly
	// ([Contract.Compatible]) are spoken without it. Empty means lockstep
	// mode.
	Fork []Fork
	// Pinned lists external servers that do not handshake (a Kubernetes
	// scheduler extender, say), each called at a fixed version. A pinned
	// version other than the client's own needs its Fork.
	Pinned []PinnedPeer

	// AutoBatch shapes the automatic batching of concurrent unary calls to
	// an endpoint into multi-call requests; nil batches at its defaults,
	// and AutoBatch{Disabled: true} sends every call alone.
	AutoBatch *AutoBatch
	// ExactlyOnce gives every call of a method not declared idempotent an
	// idempotency key of its own (see [WithIdempotencyKey]): a call whose
	// answer is lost is resent to the server instance that may have run
	// it, which answers from its record, and fails with unknown once that
	// instance is gone.
	ExactlyOnce bool
	// Heartbeats sends this client's heartbeats; share one among the
	// clients of a process so their sessions at an endpoint renew in one
	// request. Default: the client's own.
	Heartbeats *Heartbeats

	// Observer receives handshake, blocking and call events, for metrics.
	Observer ClientObserver

	// Logger receives the client's logs; default slog.Default().
	Logger *slog.Logger
	// Clock is the client's clock; default the real one.
	Clock clockwork.Clock

	// probers are what the client's endpoints wait on for a listener;
	// nil is the process's. Tests set their own, on a fake clock.
	probers *probers
	// holdPinnedLoops, when not nil, holds the loops of pinned endpoints
	// until it closes: tests show what a client does before they run.
	holdPinnedLoops <-chan struct{}
}

func (c *ClientConfig) validate() error {
	var errs []error
	if c.Component == "" {
		errs = append(errs, errors.New("Component is required"))
	}
	if c.Release == "" {
		errs = append(errs, errors.New("Release is required"))
	} else if _, err := version.NewVersion(c.Release); err != nil {
		errs = append(errs, fmt.Errorf("Release %q is not a version", c.Release))
	}
	if c.PeerRelease != "" {
		if _, err := version.NewConstraint(c.PeerRelease); err != nil {
			errs = append(errs, fmt.Errorf("PeerRelease: %w", err))
		}
	}
	for _, p := range c.Pinned {
		if _, err := clienthttp.CheckEndpointURL(p.URL, c.Insecure); err != nil {
			errs = append(errs, fmt.Errorf("pinned peer %q: %w", p.URL, err))
		}
	}
	if c.Source == nil {
		if len(c.Endpoints) == 0 && len(c.Pinned) == 0 {
			errs = append(errs, errors.New("Endpoints or Source is required"))
		}
		for _, e := range c.Endpoints {
			if _, err := clienthttp.CheckEndpointURL(e, c.Insecure); err != nil {
				errs = append(errs, fmt.Errorf("endpoint %q: %w", e, err))
			}
		}
		if len(c.Endpoints) > 0 {
			c.Source = StaticEndpoints(c.Endpoints)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.Instance == "" {
		c.Instance = randomID(8)
	}
	if c.HandshakeWait <= 0 {
		c.HandshakeWait = 30 * time.Second
	}
	c.Backoff = backoffWithDefaults(c.Backoff)
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = 16 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return nil
}

// Client calls one contract's server component. It keeps an endpoint set fed
// by its source, handshakes every endpoint on its own, and routes each call
// to an endpoint whose session agreed with it. When none has, a call blocks
// until one does (bounded by its context and ReadyTimeout), unless it is
// made with [FailFast].
type Client struct {
	cfg      ClientConfig
	contract *Contract
	offers   []handshake.Offer
	versions map[string]*peerVersion // what the client speaks, by version
	names    map[string]methodNames  // how its calls are named, by method
	hc       *http.Client
	ownsHC   bool
	beats    *Heartbeats
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu        sync.Mutex
	endpoints map[string]*endpoint
	changed   chan struct{} // closed and replaced whenever routing changes
	closed    bool

	// listed is closed once the source has listed the endpoints once
	// (at once for static endpoints and pinned peers), so that FailFast
	// knows which endpoints to wait for.
	listed     chan struct{}
	listedOnce sync.Once

	ready atomic.Pointer[[]*endpoint]
	rr    atomic.Uint64
	// blocked tracks the calls waiting for a compatible peer; waits is
	// what those waits read of the client.
	blocked route.Blocked
	waits   route.Client
	// writerWatchers counts the informers of server-written topics: while
	// there are any, every session heartbeats, since heartbeat answers say
	// where the topics' writers are.
	writerWatchers atomic.Int32
	// feeds are the watch streams its informers share (internal/watch).
	feeds watch.Feeds
}

// NewClient starts a client of c: it begins handshaking with the endpoints
// at once, in the background.
func NewClient(c *Contract, cfg ClientConfig) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("lockstep: client config: %w", err)
	}
	if cfg.Component != c.Client() {
		return nil, fmt.Errorf("lockstep: %s is not the client of %s (its client is %s)", cfg.Component, c.Name(), c.Client())
	}
	cl := &Client{
		cfg:       cfg,
		contract:  c,
		offers:    []handshake.Offer{c.Offer()},
		versions:  map[string]*peerVersion{c.Version(): {contract: c}},
		names:     namesOf(c),
		endpoints: map[string]*endpoint{},
		changed:   make(chan struct{}),
		listed:    make(chan struct{}),
	}
	cl.offersCompatible(c)
	for _, f := range cfg.Fork {
		if err := cl.addFork(f); err != nil {
			return nil, fmt.Errorf("lockstep: client config: %w", err)
		}
	}
	pinned := make([]*peerVersion, len(cfg.Pinned))
	for i, p := range cfg.Pinned {
		v, err := cl.pinnedVersion(p)
		if err != nil {
			return nil, fmt.Errorf("lockstep: client config: %w", err)
		}
		pinned[i] = v
	}
	tr := cfg.Transport
	if tr == nil {
		tr = NewTransport(cfg.TLSConfig)
		cl.ownsHC = true
	}
	cl.hc = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	cl.beats = cfg.Heartbeats
	if cl.beats == nil {
		cl.beats = NewHeartbeats(cfg.Logger, cfg.Clock)
	}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	cl.initWaits()
	empty := []*endpoint{}
	cl.ready.Store(&empty)
	for i, p := range cfg.Pinned {
		cl.addPinned(p.URL, pinned[i])
	}
	cl.follow(cfg.Source)
	return cl, nil
}

// addFork adds an earlier version the client speaks in fork mode to its
// versions and offers.
func (c *Client) addFork(f Fork) error {
	if err := checkFork(c.contract, f); err != nil {
		return err
	}
	if v, dup := c.versions[f.Contract.Version()]; dup {
		if v.conversions != nil {
			return fmt.Errorf("Fork lists %s, which %s %s speaks already: it derives from it compatibly",
				f.Contract.Version(), c.contract.Name(), c.contract.Version())
		}
		return fmt.Errorf("version %s given twice", f.Contract.Version())
	}
	c.versions[f.Contract.Version()] = &peerVersion{contract: f.Contract, conversions: f.Methods, topics: f.Topics}
	c.offers = append(c.offers, f.Contract.Offer())
	return nil
}

// pinnedVersion returns the version a pinned peer is called at: one the
// client speaks, at the paths p names.
func (c *Client) pinnedVersion(p PinnedPeer) (*peerVersion, error) {
	v := c.versionOf(p.Version)
	if v == nil {
		return nil, fmt.Errorf("pinned peer %s speaks %s %s, which this client cannot call: run it in fork mode with %s's conversions",
			p.URL, c.contract.Name(), p.Version, p.Version)
	}
	for method := range p.Paths {
		if _, ok := v.contract.Method(method); !ok {
			return nil, fmt.Errorf("pinned peer %s: Paths names %s, which %s %s does not declare",
				p.URL, method, c.contract.Name(), p.Version)
		}
	}
	return &peerVersion{contract: v.contract, conversions: v.conversions, pinned: true, paths: p.Paths}, nil
}

// follow takes the client's endpoints from src: at once from a static
// list, or from a goroutine that runs the source until the client closes.
func (c *Client) follow(src EndpointSource) {
	switch src := src.(type) {
	case nil:
		c.listedOnce.Do(func() { close(c.listed) })
	case StaticEndpoints:
		// Known now: a call right after NewClient sees them.
		c.setEndpoints(append([]string(nil), src...))
	case ReadinessSource:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			src.RunReadiness(c.ctx, c.setReports)
		}()
	default:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			src.Run(c.ctx, c.setEndpoints)
		}()
	}
}

// Contract returns the contract the client calls.
func (c *Client) Contract() *Contract { return c.contract }

// Instance returns the client's instance id.
func (c *Client) Instance() string { return c.cfg.Instance }

// setEndpoints reconciles the endpoint set with the source's latest list,
// every endpoint of it ready.
func (c *Client) setEndpoints(urls []string) {
	reports := make([]EndpointReport, len(urls))
	for i, u := range urls {
		reports[i].URL = u
	}
	c.setReports(reports)
}

// setReports reconciles the endpoint set with the source's latest report:
// new endpoints start handshaking, missing ones stop, and known ones that
// turn ready again are announced ([endpoint.announce]).
func (c *Client) setReports(reports []EndpointReport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	// want says of every reported base URL whether it is not ready; a URL
	// reported twice is ready if either report says so.
	want := map[string]bool{}
	for _, r := range reports {
		u, err := clienthttp.CheckEndpointURL(r.URL, c.cfg.Insecure)
		if err != nil {
			c.cfg.Logger.Error("lockstep: ignoring endpoint", "url", r.URL, "err", err)
			continue
		}
		base := strings.TrimRight(u.String(), "/")
		notReady, seen := want[base]
		want[base] = r.NotReady && (!seen || notReady)
	}
	for _, base := range sortedKeys(want) {
		notReady := want[base]
		e, ok := c.endpoints[base]
		if !ok {
			e = newEndpoint(c, base)
			c.endpoints[base] = e
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				e.loop().Run()
			}()
		} else if e.readyAgain(!notReady) {
			e.announce()
		}
		e.notReady = notReady
	}
	for base, e := range c.endpoints {
		if _, ok := want[base]; !ok && e.pinned == nil {
			delete(c.endpoints, base)
			e.stop()
		}
	}
	c.rebuildLocked()
	c.listedOnce.Do(func() { close(c.listed) })
}

// firstRounds waits until the source has listed the endpoints once and
// each endpoint known then has had its first handshake round, whatever
// its outcome: what FailFast waits for before it fails, as gRPC's
// fail-fast calls wait while a channel is still connecting.
func (c *Client) firstRounds(ctx context.Context) error {
	select {
	case <-c.listed:
	case <-ctx.Done():
		return contextError(ctx, c.peerState())
	case <-c.ctx.Done():
		return Errorf(CodeUnavailable, "client closed")
	}
	c.mu.Lock()
	eps := make([]*endpoint, 0, len(c.endpoints))
	for _, e := range c.endpoints {
		eps = append(eps, e)
	}
	c.mu.Unlock()
	for _, e := range eps {
		select {
		case <-e.firstRound:
		case <-ctx.Done():
			return contextError(ctx, c.peerState())
		case <-c.ctx.Done():
			return Errorf(CodeUnavailable, "client closed")
		}
	}
	return nil
}

// resync runs ClientConfig.OnResync on a goroutine the client owns, so
// Close waits for it.
func (c *Client) resync() {
	if c.cfg.OnResync == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.cfg.OnResync()
	}()
}

// rebuildLocked recomputes the routable endpoints and wakes blocked calls.
func (c *Client) rebuildLocked() {
	ready := make([]*endpoint, 0, len(c.endpoints))
	for _, base := range sortedKeys(c.endpoints) {
		if e := c.endpoints[base]; e.routable() {
			ready = append(ready, e)
		}
	}
	c.ready.Store(&ready)
	close(c.changed)
	c.changed = make(chan struct{})
}

// stateChanged is called by an endpoint whose routability changed.
func (c *Client) stateChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebuildLocked()
}

func (c *Client) changedCh() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// pick returns a routable endpoint whose version can carry method (any
// method when it is ""), and its session, round-robin.
func (c *Client) pick(method string) (*endpoint, *clientSession) {
	ready := *c.ready.Load()
	n := len(ready)
	for i := 0; i < n; i++ {
		e := ready[int(c.rr.Add(1)%uint64(n))]
		if s := e.routableSession(); s != nil && (method == "" || s.version.supports(method)) {
			return e, s
		}
	}
	return nil, nil
}

// Ready returns nil when some endpoint holds a session at an agreed version,
// else an error saying why none does.
func (c *Client) Ready() error {
	if e, _ := c.pick(""); e != nil {
		return nil
	}
	return c.blockedError(CodeUnavailable)
}

// WaitReady blocks until [Client.Ready] passes or ctx ends.
func (c *Client) WaitReady(ctx context.Context) error {
	for {
		ch := c.changedCh()
		if c.Ready() == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return contextError(ctx, c.peerState())
		}
	}
}

// EndpointStatus describes one endpoint for status pages and errors.
type EndpointStatus struct {
	URL     string         `json:"url"`
	State   string         `json:"state"`
	Version string         `json:"version,omitempty"`
	Peer    handshake.Peer `json:"peer,omitzero"`
	Error   string         `json:"error,omitempty"`
}

// Endpoints describes every endpoint, sorted by URL.
func (c *Client) Endpoints() []EndpointStatus {
	c.mu.Lock()
	eps := make([]*endpoint, 0, len(c.endpoints))
	for _, base := range sortedKeys(c.endpoints) {
		eps = append(eps, c.endpoints[base])
	}
	c.mu.Unlock()
	out := make([]EndpointStatus, len(eps))
	for i, e := range eps {
		out[i] = e.status()
	}
	return out
}

// blockedError is the error of a request that found no endpoint to carry
// it: code (incompatible_peer instead of unavailable when some endpoint
// refused the handshake) and, as its message and cause, the peers' state.
func (c *Client) blockedError(code Code) *Error {
	ps := c.peerState()
	if code == CodeUnavailable && ps.Refused {
		code = CodeIncompatiblePeer
	}
	return NewError(code, ps)
}

// Close stops the client: endpoint loops end, sessions are closed on the
// servers (best effort, briefly), and idle connections of its own transport
// are closed. Calls still waiting fail with unavailable.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	eps := make([]*endpoint, 0, len(c.endpoints))
	for _, e := range c.endpoints {
		eps = append(eps, e)
	}
	c.mu.Unlock()
	c.cancel()
	for _, e := range eps {
		e.stop()
	}
	c.wg.Wait()
	c.stateChanged()
	if c.ownsHC {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// EndpointSource tells a client where its peer's replicas are. Run reports
// the full set of endpoint base URLs through update, first as soon as it
// knows them and again whenever the set changes, until ctx ends. The static
// source is [StaticEndpoints]; DNS sources live in framework/discovery.
//
// A URL that a report adds is handshaken at once. A URL reported again
// changes nothing: a source that also knows when a replica comes back
// (a restarted pod turning ready) says so as a [ReadinessSource].
type EndpointSource interface {
	Run(ctx context.Context, update func(urls []string))
}

// ReadinessSource is an [EndpointSource] that also knows whether each
// replica is ready, as a Kubernetes EndpointSlice's ready condition says.
// The client runs RunReadiness instead of Run; update gets every endpoint
// the source knows, ready or not.
//
// Readiness does not decide routing: a lockstep server is unready until
// its own peers have handshaken it, so an endpoint that is not ready is
// still handshaken and called as any other (docs/discovery.md). What it
// decides is the reconnect: a report that turns a known endpoint ready
// again is taken as the announcement that its server listens again. The
// process's prober of its address ([ProbeStats]) dials it at once instead
// of at its next planned dial, one dial however many clients of the
// process were told, and wakes every endpoint and blocked call waiting for
// it when that dial connects.
type ReadinessSource interface {
	EndpointSource
	RunReadiness(ctx context.Context, update func(endpoints []EndpointReport))
}

// EndpointReport is one endpoint as a [ReadinessSource] reports it.
type EndpointReport struct {
	// URL is the endpoint's base URL, as [EndpointSource] reports it.
	URL string
	// NotReady says the replica is known but not ready: its pod is
	// starting or restarting, its readiness probe fails. The zero value is
	// ready, as every URL of a plain [EndpointSource] is.
	NotReady bool
}

// StaticEndpoints is a fixed list of endpoint base URLs, such as
// "https://10.0.0.7:8443".
type StaticEndpoints []string

// Run reports the list once and waits for ctx to end.
func (s StaticEndpoints) Run(ctx context.Context, update func([]string)) {
	update(append([]string(nil), s...))
	<-ctx.Done()
}

// NewTransport returns the HTTP transport lockstep clients use by default: a
// pool of HTTP/1.1 keep-alive connections per endpoint (up to 256 idle),
// opened as concurrency demands. Calls never queue behind one connection's
// stream limit, the bottleneck of a single multiplexed connection. Share one
// transport among many clients of a process (a node simulator's sessions) by
// passing it as ClientConfig.Transport.
func NewTransport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		// Connections report a peer that closes them, so a killed server
		// is noticed at once (framework/internal/probe).
		DialContext:         watchedDial((&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext),
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 5 * time.Second,
		// An empty TLSNextProto keeps TLS connections on HTTP/1.1, so TLS and
		// plain HTTP behave alike: many connections, no shared stream cap.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		// A request is written through this buffer: net/http hides the
		// body's own WriterTo behind a LimitReader, so what does not fit
		// is copied through a second buffer allocated per request, in a
		// second write. 64 KiB holds a multi-call of ~40 NodeStatus-sized
		// calls (an automatic batch under load carries ~16) in one write;
		// it costs 48 KiB per open connection over 16 KiB.
		WriteBufferSize: 64 << 10,
		ReadBufferSize:  16 << 10,
	}
}

// Run holds the client until ctx ends, then closes it: its sessions are
// closed on the servers, so a draining server need not wait for them to
// lapse. The client works from [NewClient] on; Run only ties its end to a
// context, as [Server.Run] does a server's. It returns nil. Wrapped in
// [Runnable], it is a controller-runtime manager.Runnable.
func (c *Client) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-c.ctx.Done(): // closed by someone else
	}
	return c.Close()
}

// Healthz is [Client.Ready] in the shape of controller-runtime's
// healthz.Checker.
func (c *Client) Healthz(*http.Request) error { return c.Ready() }
