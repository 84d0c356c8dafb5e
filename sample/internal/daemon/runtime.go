package daemon

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/discovery"
)

// Runtime is what a binary builds its component from: its flags, logger,
// Prometheus registry and lockstep metrics, and the completion of its
// lockstep server and client configurations.
type Runtime struct {
	Flags    *Flags
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Metrics  *framework.Metrics

	// creds is the mutual TLS material (--tls-cert, --tls-key and
	// --tls-ca), reloaded as cert-manager rotates it; serverTLS and
	// clientTLS are TLS without client certificates (--tls-cert and
	// --tls-key alone: clients trust the system's roots).
	creds                *framework.Credentials
	serverTLS, clientTLS *tls.Config

	mu  sync.Mutex
	dns map[string]*discovery.DNS
	// transports are the process's client transports, one per server name
	// certificates are checked against ("" for each URL's own host): every
	// client of the process shares its connections and TLS sessions, where
	// a transport per client would dial and handshake for each.
	transports map[string]*http.Transport
}

// NewRuntime checks the flags and sets up logs (to stderr), metrics and
// TLS.
func NewRuntime(f *Flags, stderr io.Writer) (*Runtime, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	level, _ := f.level()
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(stderr, opts)
	if f.LogFormat == "json" {
		h = slog.NewJSONHandler(stderr, opts)
	}
	rt := &Runtime{
		Flags:    f,
		Logger:   slog.New(h).With("component", f.Component),
		Registry: prometheus.NewRegistry(),
		dns:      map[string]*discovery.DNS{},

		transports: map[string]*http.Transport{},
	}
	rt.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rt.Metrics = framework.NewMetrics(rt.Registry)
	if err := rt.loadTLS(); err != nil {
		return nil, err
	}
	return rt, nil
}

// loadTLS loads the TLS material of the flags: mutual TLS, verified and
// bound to identities by the framework, when a CA is given; else a server
// certificate only, its peers unauthenticated.
func (rt *Runtime) loadTLS() error {
	f := rt.Flags
	switch {
	case f.TLSCA != "":
		creds, err := framework.LoadCredentials(framework.MTLSFiles{CertFile: f.TLSCert, KeyFile: f.TLSKey, CAFile: f.TLSCA,
			ServerName: f.TLSServerName})
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key/--tls-ca: %w", err)
		}
		rt.creds, rt.serverTLS = creds, creds.ServerTLS()
	case f.TLS():
		cert, err := tls.LoadX509KeyPair(f.TLSCert, f.TLSKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		rt.serverTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		rt.clientTLS = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.TLSServerName}
	}
	return nil
}

// ServerConfig completes a lockstep server's configuration with the
// binary's component, release, address (--listen), drain timeout, logger,
// metrics and TLS: mutual TLS credentials (which make the server
// authenticate its peers), or a server certificate alone.
func (rt *Runtime) ServerConfig(cfg framework.ServerConfig) framework.ServerConfig {
	cfg.Component, cfg.Release = rt.Flags.Component, rt.Flags.Release
	cfg.Addr, cfg.DrainTimeout = rt.Flags.Listen, rt.Flags.DrainTimeout
	cfg.Insecure = rt.Flags.Insecure
	cfg.MTLS = rt.creds
	if rt.creds == nil {
		cfg.TLSConfig = rt.serverTLS
	}
	cfg.Logger, cfg.Metrics = rt.Logger, rt.Metrics
	return cfg
}

// ClientConfig completes a lockstep client's configuration with the
// binary's component, release, logger, metrics and TLS, and with the
// endpoints of the peer named by spec ([ParsePeer]); an empty spec adds
// none (a client of pinned peers only).
func (rt *Runtime) ClientConfig(spec string, cfg framework.ClientConfig) (framework.ClientConfig, error) {
	cfg.Component, cfg.Release = rt.Flags.Component, rt.Flags.Release
	cfg.Insecure = rt.Flags.Insecure
	cfg.Logger, cfg.Observer = rt.Logger, rt.Metrics.Client()
	name := ""
	if spec != "" {
		src, err := rt.source(spec)
		if err != nil {
			return cfg, err
		}
		cfg.Source = src
		// Each peer's transport checks its own server name.
		name = rt.serverName(spec)
	}
	cfg.TLSConfig, cfg.Transport = nil, rt.transport(name)
	return cfg, nil
}

// transport returns the process's transport checking servers' certificates
// against name (the host dialled when empty), making it the first time:
// with mutual TLS, the credentials' (which follow a rotated certificate
// and CA bundle, and resume sessions per address); else the default over
// the TLS configuration, or plain.
func (rt *Runtime) transport(name string) *http.Transport {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if t := rt.transports[name]; t != nil {
		return t
	}
	var t *http.Transport
	switch {
	case rt.creds != nil:
		t = rt.creds.Transport(name)
	case rt.clientTLS != nil && name != "":
		tc := rt.clientTLS.Clone()
		tc.ServerName = name
		t = framework.NewTransport(tc)
	default:
		t = framework.NewTransport(rt.clientTLS)
	}
	rt.transports[name] = t
	return t
}

// serverName is the name a peer's certificates are checked against when
// its endpoints are addresses found through DNS: --tls-server-name if
// given, else the name resolved (for SRV, without its _service._proto
// labels). Fixed URLs are checked against their own host names.
func (rt *Runtime) serverName(spec string) string {
	p, err := ParsePeer(spec)
	if err != nil || p.DNS == nil {
		return ""
	}
	if rt.Flags.TLSServerName != "" {
		return rt.Flags.TLSServerName
	}
	if p.DNS.Host != "" {
		return strings.TrimSuffix(p.DNS.Host, ".")
	}
	labels := strings.Split(strings.TrimSuffix(p.DNS.Service, "."), ".")
	for len(labels) > 1 && strings.HasPrefix(labels[0], "_") {
		labels = labels[1:]
	}
	return strings.Join(labels, ".")
}
