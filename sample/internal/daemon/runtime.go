package daemon

import (
	"crypto/tls"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/discovery"
	"github.com/lockstep-dev/lockstep/framework/metrics"
)

// Runtime is what a binary builds its component from: its flags, logger,
// Prometheus registry and lockstep metrics, and the completion of its
// lockstep server and client configurations.
type Runtime struct {
	Flags    *Flags
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Metrics  *metrics.Metrics

	serverTLS, clientTLS *tls.Config

	mu  sync.Mutex
	dns map[string]*discovery.DNS
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
	}
	rt.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rt.Metrics = metrics.New(rt.Registry)
	var err error
	if rt.serverTLS, rt.clientTLS, err = f.tlsConfigs(); err != nil {
		return nil, err
	}
	return rt, nil
}

// ServerConfig completes a lockstep server's configuration with the
// binary's component, release, logger and metrics. The binary serves it
// itself (TLS included), so TLS is not set here.
func (rt *Runtime) ServerConfig(cfg framework.ServerConfig) framework.ServerConfig {
	cfg.Component, cfg.Release = rt.Flags.Component, rt.Flags.Release
	cfg.Insecure = rt.Flags.Insecure
	cfg.Logger, cfg.Observer = rt.Logger, rt.Metrics.Server()
	return cfg
}

// ClientConfig completes a lockstep client's configuration with the
// binary's component, release, logger, metrics and TLS, and with the
// endpoints of the peer named by spec ([ParsePeer]); an empty spec adds
// none (a client of pinned peers only).
func (rt *Runtime) ClientConfig(spec string, cfg framework.ClientConfig) (framework.ClientConfig, error) {
	cfg.Component, cfg.Release = rt.Flags.Component, rt.Flags.Release
	cfg.Insecure = rt.Flags.Insecure
	cfg.TLSConfig = rt.clientTLS
	cfg.Logger, cfg.Observer = rt.Logger, rt.Metrics.Client()
	if spec == "" {
		return cfg, nil
	}
	src, err := rt.source(spec)
	if err != nil {
		return cfg, err
	}
	cfg.Source = src
	if name := rt.serverName(spec); name != "" && cfg.TLSConfig != nil {
		cfg.TLSConfig = cfg.TLSConfig.Clone()
		cfg.TLSConfig.ServerName = name
	}
	return cfg, nil
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
