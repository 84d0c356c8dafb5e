package discovery

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/miekg/dns"
)

const (
	// DefaultInterval is how often a [DNS] source re-resolves its name
	// unless [DNSConfig].Interval says otherwise: the TTL CoreDNS gives
	// Kubernetes Service records, so a new replica is seen within about
	// twice that.
	DefaultInterval = 5 * time.Second
	// MinInterval is the shortest [DNSConfig].Interval accepted; shorter
	// ones are refused as a setup mistake that would hammer the DNS server.
	MinInterval = 50 * time.Millisecond
	// DefaultTimeout bounds one DNS query unless [DNSConfig].Timeout says
	// otherwise.
	DefaultTimeout = 2 * time.Second
)

// resolvConfPath is where the system's DNS servers and search list are
// read from when [DNSConfig].Servers is empty.
const resolvConfPath = "/etc/resolv.conf"

// DNSConfig configures a [DNS] source. Set exactly one of Host and Service.
// Zero values take the defaults named on each field.
type DNSConfig struct {
	// Host is a name resolved for A and AAAA records: one endpoint per
	// address, at Port. For a Kubernetes headless Service:
	// "nodecontroller.lockstep.svc.cluster.local".
	Host string
	// Port is the endpoints' port; required with Host, refused with
	// Service (SRV records carry their own ports).
	Port int

	// Service is a name resolved for SRV records: one endpoint per record,
	// at its target and port. For a Kubernetes headless Service with a port
	// named "https": "_https._tcp.nodecontroller.lockstep.svc.cluster.local".
	// Priorities and weights are ignored: the client handshakes every
	// endpoint and spreads calls over the compatible ones.
	Service string
	// TargetNames keeps SRV targets as host names in the URLs, to be
	// resolved by the client's transport when it connects (for TLS
	// certificates issued to names, or StatefulSet pods with stable
	// names). By default each target is resolved here, through Servers, to
	// its addresses, and each address is an endpoint of its own, exactly as
	// in Host mode; targets with no address then contribute no endpoint.
	TargetNames bool

	// Scheme is the endpoints' URL scheme: "https" (default) or "http".
	// Plain http to a non-loopback address also needs the client's
	// Insecure.
	Scheme string
	// Network picks the address families: "ip" (default) asks for A and
	// AAAA records, "ip4" for A only, "ip6" for AAAA only.
	Network string

	// Interval is the time between the end of one resolution and the start
	// of the next, whether it succeeded or not; default [DefaultInterval],
	// at least [MinInterval]. DNS caches in between add their records' TTL
	// to how stale an answer can be.
	Interval time.Duration
	// Timeout bounds each DNS query; default [DefaultTimeout].
	Timeout time.Duration

	// Servers are the DNS servers asked, in order, each "ip:port" or just
	// "ip" (port 53): the next is asked when one fails. Default: the
	// nameservers of /etc/resolv.conf.
	Servers []string
	// Search is the search list a name that is not fully qualified (no
	// trailing dot) is tried with, as the system's stub resolver would:
	// with fewer dots than resolv.conf's ndots the suffixed names come
	// first, else the name as it is. When Servers is empty, Search and
	// ndots default to those of /etc/resolv.conf; otherwise to no search
	// list and ndots 1, so names are used as they are. SRV targets are
	// always fully qualified.
	Search []string

	// Logger receives resolution failures, recoveries and endpoint
	// changes; default slog.Default().
	Logger *slog.Logger
	// Clock times the intervals; default the real one. Tests inject a fake
	// clock to step through resolutions.
	Clock clockwork.Clock

	// resolvConf is read when Servers is empty; default resolvConfPath.
	resolvConf string
	// ndots is the stub resolver's ndots option (see Search).
	ndots int
}

func (c *DNSConfig) validate() error {
	var errs []error
	switch {
	case c.Host == "" && c.Service == "":
		errs = append(errs, errors.New("one of Host and Service is required"))
	case c.Host != "" && c.Service != "":
		errs = append(errs, errors.New("Host and Service are exclusive: Host asks for A/AAAA records, Service for SRV records"))
	case c.Host != "":
		errs = append(errs, checkName("Host", c.Host)...)
		if c.Port < 1 || c.Port > 65535 {
			errs = append(errs, fmt.Errorf("Port %d is not a port: Host needs one in 1..65535", c.Port))
		}
		if c.TargetNames {
			errs = append(errs, errors.New("TargetNames applies to Service (SRV records) only"))
		}
	case c.Service != "":
		errs = append(errs, checkName("Service", c.Service)...)
		if c.Port != 0 {
			errs = append(errs, errors.New("Port applies to Host only: SRV records carry their own ports"))
		}
	}
	switch c.Scheme {
	case "":
		c.Scheme = "https"
	case "http", "https":
	default:
		errs = append(errs, fmt.Errorf("Scheme %q is not http or https", c.Scheme))
	}
	switch c.Network {
	case "":
		c.Network = "ip"
	case "ip", "ip4", "ip6":
	default:
		errs = append(errs, fmt.Errorf("Network %q is not ip, ip4 or ip6", c.Network))
	}
	switch {
	case c.Interval == 0:
		c.Interval = DefaultInterval
	case c.Interval < MinInterval:
		errs = append(errs, fmt.Errorf("Interval %v is below the minimum %v", c.Interval, MinInterval))
	}
	switch {
	case c.Timeout == 0:
		c.Timeout = DefaultTimeout
	case c.Timeout < 0:
		errs = append(errs, fmt.Errorf("Timeout %v is negative", c.Timeout))
	}
	servers := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		addr, err := serverAddr(s)
		if err != nil {
			errs = append(errs, err)
		}
		servers = append(servers, addr)
	}
	search := make([]string, 0, len(c.Search))
	for _, s := range c.Search {
		errs = append(errs, checkName("Search domain", s)...)
		search = append(search, dns.Fqdn(strings.ToLower(s)))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.Servers, c.Search, c.ndots = servers, search, 1
	if len(c.Servers) == 0 {
		if err := c.readResolvConf(); err != nil {
			return err
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

// readResolvConf fills Servers, and Search and ndots unless Search was
// given, from the system's resolver configuration.
func (c *DNSConfig) readResolvConf() error {
	path := c.resolvConf
	if path == "" {
		path = resolvConfPath
	}
	rc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return fmt.Errorf("no Servers given and %w", err)
	}
	for _, s := range rc.Servers {
		addr, err := serverAddr(net.JoinHostPort(s, rc.Port))
		if err != nil {
			return fmt.Errorf("no Servers given and %s: %w", path, err)
		}
		c.Servers = append(c.Servers, addr)
	}
	if len(c.Servers) == 0 {
		return fmt.Errorf("no Servers given and %s names no nameserver", path)
	}
	if len(c.Search) == 0 {
		for _, s := range rc.Search {
			c.Search = append(c.Search, dns.Fqdn(strings.ToLower(s)))
		}
		c.ndots = rc.Ndots
	}
	return nil
}

// checkName refuses what is not a domain name, and addresses, for which
// [Static] is the source.
func checkName(field, name string) []error {
	if _, err := netip.ParseAddr(name); err == nil {
		return []error{fmt.Errorf("%s %q is an address, not a name: use Static for fixed addresses", field, name)}
	}
	if _, ok := dns.IsDomainName(name); !ok || name == "." {
		return []error{fmt.Errorf("%s %q is not a domain name", field, name)}
	}
	return nil
}

// serverAddr normalises a DNS server address to "ip:port", port 53 by
// default. Names are refused: finding the DNS server would need DNS.
func serverAddr(s string) (string, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Port() != 0 {
		return ap.String(), nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return netip.AddrPortFrom(a, 53).String(), nil
	}
	return "", fmt.Errorf("server %q is not an IP address with an optional port", s)
}
