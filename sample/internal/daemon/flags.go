// Package daemon is what every binary of the sample does the same way:
// common flags, logs, TLS, finding peers (static URLs or DNS), Prometheus
// metrics, serving /healthz, /readyz and /metrics beside the lockstep
// protocol, and a graceful stop on SIGTERM. A binary declares its own
// flags, builds its component from a [Runtime], and hands [Main] a
// [Service].
package daemon

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Releases are the binary releases the sample's builds report: --api v1
// acts as the old build, --api v2 as the new one, and --api v2.1 as a
// minor release after it (nodestatus 2.1.0, which derives from 2.0.0
// compatibly: the kubelet and the node controller speak both, with no
// fork mode).
var Releases = map[string]string{"v1": "1.30.0", "v2": "1.31.0", "v2.1": "1.32.0"}

// Flags are the flags every sample binary takes.
type Flags struct {
	// Component is the binary's component name.
	Component string
	// Listen is the address served: the lockstep protocol (for servers),
	// /healthz, /readyz, /metrics and /status.
	Listen string
	// API is the contract generation the binary runs, v1 or v2, as the old
	// or the new build would; Release defaults to the build's release.
	API     string
	Release string
	// Fork keeps the previous contract version alive beside the current
	// one (fork mode), where the binary has one.
	Fork bool
	// TLSCert and TLSKey are the binary's certificate, served to clients
	// and presented to servers; TLSCA verifies the other side's. Without
	// them it speaks plain HTTP, which needs Insecure off loopback.
	TLSCert, TLSKey, TLSCA string
	// TLSServerName is the name servers' certificates are checked against
	// when endpoints are addresses found through DNS; default the name
	// resolved.
	TLSServerName string
	Insecure      bool
	// DNSServers and DNSInterval configure DNS discovery of peers.
	DNSServers  string
	DNSInterval time.Duration
	// LogLevel and LogFormat shape the logs on stderr.
	LogLevel  string
	LogFormat string
	// DrainTimeout bounds the first phase of a graceful stop, in which
	// clients are told to leave (ServerConfig.DrainTimeout).
	DrainTimeout time.Duration
}

// NewFlags registers the common flags on fs for a component, with its
// default listen address; hasFork says whether --fork applies to it.
func NewFlags(fs *flag.FlagSet, component, listen string, hasFork bool) *Flags {
	f := &Flags{Component: component}
	fs.StringVar(&f.Listen, "listen", listen, "address to serve on: the lockstep protocol, /healthz, /readyz, /metrics and /status")
	fs.StringVar(&f.API, "api", "v2", "contract generation to run, as the old (v1), the new (v2) or its minor release's (v2.1: the kubelet and the node controller speak nodestatus 2.1.0 and 2.0.0) build would")
	fs.StringVar(&f.Release, "release", "", "release reported in handshakes (default 1.30.0 for --api v1, 1.31.0 for --api v2, 1.32.0 for --api v2.1)")
	if hasFork {
		fs.BoolVar(&f.Fork, "fork", false, "fork mode: with --api v2, keep speaking the 1.0.0 contracts too")
	}
	fs.StringVar(&f.TLSCert, "tls-cert", "", "PEM certificate of this component (server and client side)")
	fs.StringVar(&f.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.TLSCA, "tls-ca", "", "PEM CA bundle that peers' certificates must chain to; a server then takes lockstep calls only from certificates naming a component allowed to call it")
	fs.StringVar(&f.TLSServerName, "tls-server-name", "", "name to verify servers' certificates against, for peers found by DNS (default: the name resolved)")
	fs.BoolVar(&f.Insecure, "insecure", false, "allow plain HTTP off loopback")
	fs.StringVar(&f.DNSServers, "dns-server", "", "DNS servers for dns+ and srv+ peers, comma-separated (default: /etc/resolv.conf)")
	fs.DurationVar(&f.DNSInterval, "dns-interval", 0, "how often dns+ and srv+ peers are resolved again (default 5s)")
	fs.StringVar(&f.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.LogFormat, "log-format", "text", "text or json")
	fs.DurationVar(&f.DrainTimeout, "drain-timeout", 10*time.Second, "how long a graceful stop waits for clients to leave before it closes the listener (calls in flight then get 10s more)")
	return f
}

// Validate checks the flags and fills the release.
func (f *Flags) Validate() error {
	var errs []error
	if _, ok := Releases[f.API]; !ok {
		errs = append(errs, fmt.Errorf("--api %q: want v1, v2 or v2.1", f.API))
	}
	if f.Release == "" {
		f.Release = Releases[f.API]
	}
	if f.Fork && f.API != "v2" {
		errs = append(errs, errors.New("--fork needs --api v2: fork mode keeps the previous version alive beside the current one"))
	}
	if (f.TLSCert == "") != (f.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if f.TLSCA != "" && f.TLSCert == "" {
		errs = append(errs, errors.New("--tls-ca needs --tls-cert and --tls-key"))
	}
	if _, err := f.level(); err != nil {
		errs = append(errs, err)
	}
	if f.LogFormat != "text" && f.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", f.LogFormat))
	}
	return errors.Join(errs...)
}

func (f *Flags) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.LogLevel)
	}
	return l, nil
}

// TLS reports whether the binary speaks TLS.
func (f *Flags) TLS() bool { return f.TLSCert != "" }

// dnsServers splits --dns-server.
func (f *Flags) dnsServers() []string {
	var out []string
	for _, s := range strings.Split(f.DNSServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ListFlag is a flag that may be given several times.
type ListFlag []string

// String implements flag.Value.
func (l *ListFlag) String() string { return strings.Join(*l, " ") }

// Set implements flag.Value.
func (l *ListFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
