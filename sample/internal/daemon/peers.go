package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/discovery"
)

// PeerSyntax describes, for flag help, how a peer is named.
const PeerSyntax = "comma-separated base URLs (http://127.0.0.1:8441), " +
	"or dns+https://NAME:PORT for every A/AAAA record of NAME (a headless Service), " +
	"or srv+https://_https._tcp.NAME for every SRV record"

// Peer is a parsed peer flag: fixed URLs, or a name to resolve.
type Peer struct {
	// URLs are fixed endpoints.
	URLs []string
	// DNS, when set, resolves the endpoints instead.
	DNS *discovery.DNSConfig
}

// ParsePeer reads a peer flag; see [PeerSyntax].
func ParsePeer(spec string) (Peer, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Peer{}, errors.New("no peer given")
	}
	if scheme, rest, ok := strings.Cut(spec, "://"); ok && (strings.HasPrefix(scheme, "dns+") || strings.HasPrefix(scheme, "srv+")) {
		kind, endpointScheme, _ := strings.Cut(scheme, "+")
		if endpointScheme != "http" && endpointScheme != "https" {
			return Peer{}, fmt.Errorf("peer %q: want %s+http or %s+https", spec, kind, kind)
		}
		if strings.Contains(rest, ",") || strings.Contains(rest, "/") {
			return Peer{}, fmt.Errorf("peer %q: a DNS peer is one name", spec)
		}
		cfg := &discovery.DNSConfig{Scheme: endpointScheme}
		if kind == "srv" {
			cfg.Service = rest
		} else {
			host, port, err := net.SplitHostPort(rest)
			if err != nil {
				return Peer{}, fmt.Errorf("peer %q: want dns+%s://NAME:PORT: %w", spec, endpointScheme, err)
			}
			n, err := strconv.Atoi(port)
			if err != nil || n <= 0 || n > 65535 {
				return Peer{}, fmt.Errorf("peer %q: port %q is not a port", spec, port)
			}
			cfg.Host, cfg.Port = host, n
		}
		return Peer{DNS: cfg}, nil
	}
	var p Peer
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		u, err := url.Parse(item)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Peer{}, fmt.Errorf("peer %q: %q is not an http(s) URL; want %s", spec, item, PeerSyntax)
		}
		p.URLs = append(p.URLs, strings.TrimRight(item, "/"))
	}
	return p, nil
}

// source returns the endpoint source of a peer; DNS sources are shared by
// every client of the runtime that names the same peer, so a kubelet's
// thousands of node sessions resolve the name once per interval.
func (rt *Runtime) source(spec string) (framework.EndpointSource, error) {
	p, err := ParsePeer(spec)
	if err != nil {
		return nil, err
	}
	if p.DNS == nil {
		return discovery.Static(p.URLs...), nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if d, ok := rt.dns[spec]; ok {
		return d, nil
	}
	cfg := *p.DNS
	cfg.Servers = rt.Flags.dnsServers()
	cfg.Interval = rt.Flags.DNSInterval
	cfg.Logger = rt.Logger
	d, err := discovery.NewDNS(cfg)
	if err != nil {
		return nil, fmt.Errorf("peer %q: %w", spec, err)
	}
	rt.dns[spec] = d
	return d, nil
}
