package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// udpSize is the EDNS0 buffer size queries advertise: the DNS flag day 2020
// value, which avoids IP fragmentation. Larger answers come truncated and
// are asked again over TCP.
const udpSize = 1232

// answer is what one server said about a name and type.
type answer struct {
	// exists is false when the name does not exist at all (NXDOMAIN).
	exists bool
	// records are the answer section's records of the type asked for; none
	// when the name has no such records.
	records []dns.RR
	// additional is the additional section, where SRV answers often carry
	// their targets' addresses.
	additional []dns.RR
}

// resolve looks the configured name up once and returns the sorted,
// deduplicated endpoint URLs. An error means no trustworthy answer was had;
// an empty list means the name has no records.
func (d *DNS) resolve(ctx context.Context) ([]string, error) {
	var hostports []string
	var err error
	if d.cfg.Host != "" {
		hostports, err = d.resolveHost(ctx)
	} else {
		hostports, err = d.resolveService(ctx)
	}
	if err != nil {
		return nil, err
	}
	urls := make([]string, 0, len(hostports))
	for _, hp := range hostports {
		urls = append(urls, d.cfg.Scheme+"://"+hp)
	}
	slices.Sort(urls)
	return slices.Compact(urls), nil
}

// resolveHost returns "address:port" for every address of the first
// candidate name that has any.
func (d *DNS) resolveHost(ctx context.Context) ([]string, error) {
	port := strconv.Itoa(d.cfg.Port)
	for _, name := range d.candidates(d.cfg.Host) {
		addrs, err := d.addresses(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			continue
		}
		hostports := make([]string, len(addrs))
		for i, a := range addrs {
			hostports[i] = net.JoinHostPort(a.String(), port)
		}
		return hostports, nil
	}
	return nil, nil
}

// resolveService returns "target:port" for every SRV record of the first
// candidate name that has any, each target resolved to its addresses unless
// TargetNames is set.
func (d *DNS) resolveService(ctx context.Context) ([]string, error) {
	for _, name := range d.candidates(d.cfg.Service) {
		ans, err := d.query(ctx, name, dns.TypeSRV)
		if err != nil {
			return nil, err
		}
		if len(ans.records) > 0 {
			return d.srvEndpoints(ctx, ans)
		}
	}
	return nil, nil
}

func (d *DNS) srvEndpoints(ctx context.Context, ans answer) ([]string, error) {
	// Targets' addresses come from the additional section when it has any
	// of the wanted families for them, else from a query of their own.
	known := map[string][]netip.Addr{}
	for _, a := range d.addressRecords(ans.additional) {
		known[a.name] = append(known[a.name], a.addr)
	}
	var hostports []string
	for _, rr := range ans.records {
		srv := rr.(*dns.SRV)
		target := strings.ToLower(dns.Fqdn(srv.Target))
		if target == "." || srv.Port == 0 {
			// RFC 2782: a target of "." says the service is not offered
			// at this name; port 0 cannot be connected to.
			continue
		}
		port := strconv.Itoa(int(srv.Port))
		if d.cfg.TargetNames {
			hostports = append(hostports, net.JoinHostPort(strings.TrimSuffix(target, "."), port))
			continue
		}
		addrs, ok := known[target]
		if !ok {
			var err error
			if addrs, err = d.addresses(ctx, target); err != nil {
				return nil, err
			}
			known[target] = addrs
		}
		for _, a := range addrs {
			hostports = append(hostports, net.JoinHostPort(a.String(), port))
		}
	}
	return hostports, nil
}

// addresses returns name's addresses of the configured families: none when
// the name does not exist or has no such records.
func (d *DNS) addresses(ctx context.Context, name string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	for _, qtype := range d.addressTypes() {
		ans, err := d.query(ctx, name, qtype)
		if err != nil {
			return nil, err
		}
		if !ans.exists {
			// NXDOMAIN holds for every type: no need to ask for the other.
			return nil, nil
		}
		for _, a := range d.addressRecords(ans.records) {
			addrs = append(addrs, a.addr)
		}
	}
	return addrs, nil
}

func (d *DNS) addressTypes() []uint16 {
	switch d.cfg.Network {
	case "ip4":
		return []uint16{dns.TypeA}
	case "ip6":
		return []uint16{dns.TypeAAAA}
	default:
		return []uint16{dns.TypeA, dns.TypeAAAA}
	}
}

// namedAddr is an address record: its owner name and address.
type namedAddr struct {
	name string
	addr netip.Addr
}

// addressRecords picks the A and AAAA records of the configured families.
func (d *DNS) addressRecords(rrs []dns.RR) []namedAddr {
	var out []namedAddr
	for _, rr := range rrs {
		var ip net.IP
		switch rec := rr.(type) {
		case *dns.A:
			if d.cfg.Network != "ip6" {
				ip = rec.A.To4()
			}
		case *dns.AAAA:
			if d.cfg.Network != "ip4" {
				ip = rec.AAAA.To16()
			}
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, namedAddr{name: strings.ToLower(rr.Header().Name), addr: a})
		}
	}
	return out
}

// candidates returns the fully qualified names to try for name, in order,
// as a stub resolver with the configured search list and ndots would.
func (d *DNS) candidates(name string) []string {
	name = strings.ToLower(name)
	if dns.IsFqdn(name) {
		return []string{name}
	}
	fqdn := name + "."
	asIs := strings.Count(name, ".") >= d.cfg.ndots
	var names []string
	if asIs {
		names = append(names, fqdn)
	}
	for _, suffix := range d.cfg.Search {
		names = append(names, fqdn+suffix)
	}
	if !asIs {
		names = append(names, fqdn)
	}
	return names
}

// query asks the servers in turn for name's records of type qtype, until
// one answers NOERROR or NXDOMAIN. Any other outcome from every server is
// an error.
func (d *DNS) query(ctx context.Context, name string, qtype uint16) (answer, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(udpSize, false)
	var errs []error
	for _, server := range d.cfg.Servers {
		in, err := d.exchange(ctx, m, server)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", server, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		switch in.Rcode {
		case dns.RcodeSuccess:
			ans := answer{exists: true, additional: in.Extra}
			for _, rr := range in.Answer {
				if rr.Header().Rrtype == qtype {
					ans.records = append(ans.records, rr)
				}
			}
			return ans, nil
		case dns.RcodeNameError:
			return answer{}, nil
		default:
			errs = append(errs, fmt.Errorf("%s answered %s", server, dns.RcodeToString[in.Rcode]))
		}
	}
	return answer{}, fmt.Errorf("%s %s: %w", dns.TypeToString[qtype], name, errors.Join(errs...))
}

// exchange asks one server over UDP, and again over TCP when the answer
// did not fit.
func (d *DNS) exchange(ctx context.Context, m *dns.Msg, server string) (*dns.Msg, error) {
	in, err := d.exchangeOver(ctx, "udp", m, server)
	if err == nil && in.Truncated {
		in, err = d.exchangeOver(ctx, "tcp", m, server)
	}
	if err != nil {
		return nil, err
	}
	q := m.Question[0]
	if len(in.Question) != 1 || !strings.EqualFold(in.Question[0].Name, q.Name) || in.Question[0].Qtype != q.Qtype {
		return nil, errors.New("the answer is to another question")
	}
	return in, nil
}

// exchangeOver sends m over network and reads the answer, within Timeout
// and until ctx ends, whichever comes first.
func (d *DNS) exchangeOver(ctx context.Context, network string, m *dns.Msg, server string) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	c := &dns.Client{Net: network, UDPSize: udpSize}
	conn, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Deadlines bound the exchange; closing the connection when ctx ends
	// also ends it at once when the source stops.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	in, _, err := c.ExchangeWithConnContext(ctx, m, conn)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("no answer over %s: %w", network, ctx.Err())
	}
	return in, err
}
