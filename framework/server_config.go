package framework

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/replay"
)

// ServerConfig configures a [Server]. Zero values take the defaults named on
// each field.
type ServerConfig struct {
	// Component is the server's component name (required), e.g.
	// "nodecontroller". Every contract it serves must name it as server.
	Component string
	// Release is the binary's own version (required), e.g. "1.31.2".
	Release string
	// Instance names this process; default: 16 random hex digits.
	Instance string
	// PeerRelease maps a contract name to a hashicorp/go-version
	// constraint on the client's release.
	PeerRelease map[string]string
	// RequirePeers lists contracts whose client must hold a live session
	// before /readyz reports ready.
	RequirePeers []string

	// SessionTTL is how long a session lives without calls or heartbeats;
	// default 5s.
	SessionTTL time.Duration
	// Heartbeat is the interval clients are told to heartbeat at; default
	// SessionTTL/5.
	Heartbeat time.Duration
	// MaxBodyBytes bounds request bodies; default 4 MiB. Larger bodies are
	// answered with payload_too_large (413).
	MaxBodyBytes int64
	// MaxSessions bounds live sessions; default 100000. Handshakes beyond it
	// are answered with resource_exhausted, and so are those of a peer
	// holding more than a few once three quarters are held: the last
	// quarter is kept for peers holding few (see Limits.SessionsPerPeer).
	MaxSessions int
	// MaxInFlightPerSession bounds concurrent calls of one session; default
	// 1024. Calls beyond it are answered with resource_exhausted.
	MaxInFlightPerSession int
	// IdempotencyWindow is how long the answer of a call that carries an
	// idempotency key is kept for replays of that key; default 5m.
	// IdempotencyKeysPerPeer bounds the keys kept per peer and contract,
	// over all the peer's client instances (a peer as for [Limits]: its
	// identity under mutual TLS); default 4096, the oldest forgotten
	// first, and 16 MiB of keys and answers. IdempotencyMaxBytes bounds
	// the bytes of every peer's records together; default 256 MiB, beyond
	// which the oldest records of the peer holding the most are forgotten
	// first, so that a peer holding less than an equal share keeps its
	// records. Only finished calls' records are forgotten; those of calls
	// still running are bounded by Limits.InFlightPerPeer. Records live
	// in memory: a restarted server has none (see docs/protocol.md).
	IdempotencyWindow      time.Duration
	IdempotencyKeysPerPeer int
	IdempotencyMaxBytes    int
	// MaxHandshakeWait caps a refused handshake's ?wait=; default 60s.
	MaxHandshakeWait time.Duration
	// ReadHeaderTimeout and IdleTimeout bound slow and idle connections;
	// defaults 10s and 120s.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// DrainTimeout bounds the first phase of [Server.Shutdown], in which
	// every session is told the server is draining; default 2×Heartbeat
	// plus one second.
	DrainTimeout time.Duration
	// DrainQuiet is how long no request may arrive before the first phase
	// of a drain ends, so calls already on their way are answered (refused
	// unprocessed) rather than cut with the connection; default 100ms.
	DrainQuiet time.Duration

	// Addr is where [Server.Run] listens, e.g. ":8443" or "127.0.0.1:8441";
	// required by Run, unused by Serve.
	Addr string

	// TLSConfig enables TLS. Without it the server serves plain HTTP, which
	// it refuses on a non-loopback address unless Insecure is set.
	TLSConfig *tls.Config
	// Insecure allows plain HTTP on a non-loopback address.
	Insecure bool
	// MTLS enables mutual TLS (instead of TLSConfig): the server serves its
	// certificate and requires a client certificate chaining to its CA on
	// every lockstep entry, binds sessions to the identity the certificate
	// names, and serves its status page and metrics to operator identities
	// only (docs/security.md). Without it the server knows only what peers
	// claim, and says so in its log at start.
	MTLS *Credentials
	// Authorizer, when set, may refuse any entry once its peer is
	// authenticated (handshake, call, batch item, multi-call, topic write,
	// watch, heartbeat, session close).
	Authorizer Authorizer
	// Limits bound what one peer may take; see [Limits] for the defaults.
	Limits Limits

	// Interceptors wrap every call, first outermost.
	Interceptors []Interceptor
	// Propagator, when set, carries the trace context of each topic write
	// (the context given to [TopicWriter.SetContext], or a client write's
	// handling) to the watchers of the change it makes ([Propagator]).
	Propagator Propagator
	// OnPeerJoined and OnPeerLost are called when a client instance's
	// session starts, and when it is closed or lapses (measured on this
	// server's monotonic clock only). They must not block.
	OnPeerJoined func(SessionInfo)
	OnPeerLost   func(SessionInfo)

	// Observer receives handshake and call events, besides Metrics.
	Observer ServerObserver
	// Metrics receives the server's Prometheus metrics, served at
	// /metrics. Default: a new [Metrics] on a registry of its own (with Go
	// runtime and process collectors). Share one among a process's servers
	// and clients so one scrape sees them all.
	Metrics *Metrics
	// NoMetrics turns metrics off: nothing is collected and /metrics is
	// not served (a binary that serves them elsewhere, say).
	NoMetrics bool

	// Logger receives the server's logs; default slog.Default().
	Logger *slog.Logger
	// Clock is the server's clock; default the real one. Tests inject a
	// fake one.
	Clock clockwork.Clock

	// watchWriteTimeout is how long a watch stream may take to accept a
	// write before its connection is closed: 2×SessionTTL. It is a
	// field, not a constant, so that tests of watchers that never read
	// need not wait for it (export_test: SetWatchWriteTimeout).
	watchWriteTimeout time.Duration
}

func (c *ServerConfig) validate() error {
	if err := c.check(); err != nil {
		return err
	}
	return c.fillDefaults()
}

// check reports every required field that is missing or malformed at once,
// so a misconfigured binary names all its mistakes in one start.
func (c *ServerConfig) check() error {
	var errs []error
	if c.Component == "" {
		errs = append(errs, errors.New("Component is required"))
	}
	if c.Release == "" {
		errs = append(errs, errors.New("Release is required"))
	} else if _, err := version.NewVersion(c.Release); err != nil {
		errs = append(errs, errors.New("Release "+c.Release+" is not a version"))
	}
	for contract, constraint := range c.PeerRelease {
		if _, err := version.NewConstraint(constraint); err != nil {
			errs = append(errs, errors.New("PeerRelease["+contract+"]: "+err.Error()))
		}
	}
	if c.MTLS != nil && c.TLSConfig != nil {
		errs = append(errs, errors.New("set MTLS or TLSConfig, not both"))
	}
	return errors.Join(errs...)
}

// fillDefaults gives every unset field its documented default; it fails
// only where two fields set together contradict each other.
func (c *ServerConfig) fillDefaults() error {
	if c.MTLS != nil {
		c.TLSConfig = c.MTLS.ServerTLS()
	}
	if c.Instance == "" {
		c.Instance = randomID(8)
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 5 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = c.SessionTTL / 5
	}
	if c.Heartbeat >= c.SessionTTL {
		return errors.New("Heartbeat must be shorter than SessionTTL")
	}
	if c.watchWriteTimeout <= 0 {
		c.watchWriteTimeout = 2 * c.SessionTTL
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 20
	}
	if c.IdempotencyWindow <= 0 {
		c.IdempotencyWindow = replay.DefaultWindow
	}
	if c.IdempotencyKeysPerPeer <= 0 {
		c.IdempotencyKeysPerPeer = replay.DefaultKeysPerPeer
	}
	if c.IdempotencyMaxBytes <= 0 {
		c.IdempotencyMaxBytes = replay.DefaultMaxBytes
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 100000
	}
	if err := c.Limits.validate(c.MaxSessions); err != nil {
		return err
	}
	if c.MaxInFlightPerSession <= 0 {
		c.MaxInFlightPerSession = 1024
	}
	if c.MaxHandshakeWait <= 0 {
		c.MaxHandshakeWait = 60 * time.Second
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 2*c.Heartbeat + time.Second
	}
	if c.DrainQuiet <= 0 {
		c.DrainQuiet = 100 * time.Millisecond
	}
	if c.NoMetrics {
		c.Metrics = nil
	} else if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	if c.Metrics != nil {
		if c.Observer == nil {
			c.Observer = c.Metrics.Server()
		} else {
			c.Observer = teeServerObserver{A: c.Metrics.Server(), B: c.Observer}
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return nil
}

// randomID returns n random bytes as hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// Propagator carries what a context holds of a request (its trace context)
// in headers: from a topic's write to every watcher of the change it makes.
// The writer's side injects it when the change is written
// ([TopicWriter.SetContext], [TopicPublisher.Set], a client's topic write
// as the server handles it); the change's frames carry it
// (docs/topics.md, "header"); an [Informer] extracts it for the handler
// that reports the change ([Informer.DeliveryContext]). Set it in
// ServerConfig.Propagator and ClientConfig.Propagator; the otel module
// provides one for OpenTelemetry. Without one, changes carry nothing.
type Propagator interface {
	// Inject writes what ctx carries into h.
	Inject(ctx context.Context, h http.Header)
	// Extract returns ctx carrying what h holds.
	Extract(ctx context.Context, h http.Header) context.Context
}

// changeHeader encodes what p injects from ctx as a frame's "header"
// member's value (see frames.EncodeHeader), or nil when there is nothing
// (or too much) to carry.
func changeHeader(p Propagator, ctx context.Context) []byte {
	if p == nil || ctx == nil {
		return nil
	}
	h := http.Header{}
	p.Inject(ctx, h)
	return frames.EncodeHeader(h)
}
