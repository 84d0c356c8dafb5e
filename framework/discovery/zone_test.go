package discovery_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// zone is a real DNS server on 127.0.0.1, over UDP and TCP on one port,
// answering from records the test changes while sources run.
type zone struct {
	Addr string

	mu      sync.Mutex
	records map[string][]dns.RR // by lower-case owner name; a name absent is NXDOMAIN
	mode    zoneMode
	glue    bool           // SRV answers carry their targets' addresses
	asked   map[string]int // queries answered or not, by "udp A", "tcp SRV"...

	servers []*dns.Server
	served  chan error
}

// zoneMode is how the zone treats queries.
type zoneMode int

const (
	answering     zoneMode = iota // answers from its records
	serverFailure                 // answers SERVFAIL
	refusing                      // answers REFUSED
	silent                        // reads queries and never answers
)

// startZone starts an empty zone on a random port of 127.0.0.1, stopped
// when the test ends.
func startZone(t testing.TB) *zone {
	t.Helper()
	return startZoneAt(t, "127.0.0.1:0")
}

// startZoneAt starts an empty zone on addr, for a server that comes back:
// it waits (bounded) while the address is still held by the one before.
func startZoneAt(t testing.TB, addr string) *zone {
	t.Helper()
	var z *zone
	var err error
	require.Eventually(t, func() bool { z, err = newZone(addr); return err == nil }, 5*time.Second, 10*time.Millisecond,
		"zone at %s", addr)
	t.Cleanup(z.stop)
	return z
}

// newZone starts an empty zone on addr; the caller stops it.
func newZone(addr string) (*zone, error) {
	z := &zone{records: map[string][]dns.RR{}, asked: map[string]int{}, served: make(chan error, 2)}
	pc, l, err := listenDNS(addr)
	if err != nil {
		return nil, err
	}
	z.Addr = pc.LocalAddr().String()
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: z}, {Listener: l, Handler: z}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { z.served <- srv.ActivateAndServe() }()
		<-started
		z.servers = append(z.servers, srv)
	}
	return z, nil
}

// listenDNS opens UDP and TCP on one port, trying a few ports when addr
// asks for any and the TCP side of the UDP port is taken. Each try takes a
// fresh port, so there is nothing to wait for between tries.
func listenDNS(addr string) (net.PacketConn, net.Listener, error) {
	var err error
	for range 50 {
		var pc net.PacketConn
		pc, err = net.ListenPacket("udp", addr)
		if err != nil {
			continue
		}
		l, lerr := net.Listen("tcp", pc.LocalAddr().String())
		if lerr == nil {
			return pc, l, nil
		}
		_ = pc.Close()
		err = lerr
	}
	return nil, nil, err
}

// stop shuts the zone down; its port then refuses queries.
func (z *zone) stop() {
	z.mu.Lock()
	servers := z.servers
	z.servers = nil
	z.mu.Unlock()
	for _, srv := range servers {
		_ = srv.Shutdown()
		<-z.served
	}
}

// ServeDNS answers one query as the zone's mode says.
func (z *zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	z.mu.Lock()
	defer z.mu.Unlock()
	q := req.Question[0]
	network := w.LocalAddr().Network()
	z.asked[network+" "+dns.TypeToString[q.Qtype]]++
	m := new(dns.Msg)
	m.SetReply(req)
	switch z.mode {
	case silent:
		return
	case serverFailure:
		m.Rcode = dns.RcodeServerFailure
	case refusing:
		m.Rcode = dns.RcodeRefused
	case answering:
		m.Authoritative = true
		rrs, exists := z.records[strings.ToLower(q.Name)]
		if !exists {
			m.Rcode = dns.RcodeNameError
		}
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, rr)
				if srv, ok := rr.(*dns.SRV); ok && z.glue {
					m.Extra = append(m.Extra, z.addressesLocked(srv.Target)...)
				}
			}
		}
	}
	if network == "udp" {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

func (z *zone) addressesLocked(name string) []dns.RR {
	var out []dns.RR
	for _, rr := range z.records[strings.ToLower(name)] {
		if t := rr.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
			out = append(out, rr)
		}
	}
	return out
}

// setAddrs makes addrs the A and AAAA records of name; with none, the name
// exists without addresses (NOERROR, empty answer).
func (z *zone) setAddrs(name string, addrs ...string) {
	var rrs []dns.RR
	for _, a := range addrs {
		ip := net.ParseIP(a)
		hdr := dns.RR_Header{Name: dns.Fqdn(name), Class: dns.ClassINET, Ttl: 5, Rrtype: dns.TypeA}
		if ip.To4() != nil {
			rrs = append(rrs, &dns.A{Hdr: hdr, A: ip.To4()})
		} else {
			hdr.Rrtype = dns.TypeAAAA
			rrs = append(rrs, &dns.AAAA{Hdr: hdr, AAAA: ip})
		}
	}
	z.replace(name, rrs, dns.TypeA, dns.TypeAAAA)
}

// setSRV makes targets ("pod-a.example.:8443") the SRV records of name.
func (z *zone) setSRV(t testing.TB, name string, targets ...string) {
	t.Helper()
	var rrs []dns.RR
	for _, tp := range targets {
		target, port, err := net.SplitHostPort(tp)
		if err != nil {
			t.Fatal(err)
		}
		rrs = append(rrs, mustRR(t, fmt.Sprintf("%s 5 IN SRV 0 50 %s %s", name, port, dns.Fqdn(target))))
	}
	z.replace(name, rrs, dns.TypeSRV)
}

// replace puts rrs in place of name's records of types, creating the name.
func (z *zone) replace(name string, rrs []dns.RR, types ...uint16) {
	z.mu.Lock()
	defer z.mu.Unlock()
	name = strings.ToLower(dns.Fqdn(name))
	kept := slices.DeleteFunc(slices.Clone(z.records[name]), func(rr dns.RR) bool {
		return slices.Contains(types, rr.Header().Rrtype)
	})
	z.records[name] = append(kept, rrs...)
}

// remove deletes name: it is then NXDOMAIN.
func (z *zone) remove(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	delete(z.records, strings.ToLower(dns.Fqdn(name)))
}

func (z *zone) setMode(m zoneMode) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.mode = m
}

func (z *zone) setGlue(on bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.glue = on
}

// queries returns how many queries of kind ("udp A", "tcp SRV"...) came.
func (z *zone) queries(kind string) int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.asked[kind]
}

// total returns how many queries came.
func (z *zone) total() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	n := 0
	for _, c := range z.asked {
		n += c
	}
	return n
}

func mustRR(t testing.TB, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatalf("record %q: %v", s, err)
	}
	return rr
}

// watcher runs a source as a client would and collects its updates.
type watcher struct {
	updates chan []string
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run returned
}

// watch runs src until the test ends.
func watch(t testing.TB, src framework.EndpointSource) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{updates: make(chan []string, 1000), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		src.Run(ctx, func(urls []string) { w.updates <- urls })
	}()
	t.Cleanup(func() { w.stop(t) })
	return w
}

// stop ends Run and waits for it to return: after it, every update Run
// ever made is in updates.
func (w *watcher) stop(t testing.TB) {
	t.Helper()
	w.cancel()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		t.Error("Run did not return within 5s of its context ending")
	}
}

// next returns the next update, failing the test after 5s.
func (w *watcher) next(t testing.TB) []string {
	t.Helper()
	select {
	case urls := <-w.updates:
		return urls
	case <-time.After(5 * time.Second):
		t.Fatal("no update within 5s")
		return nil
	}
}

// expect fails unless the next update is want.
func (w *watcher) expect(t testing.TB, want ...string) {
	t.Helper()
	if got := w.next(t); !slices.Equal(got, want) || got == nil {
		t.Fatalf("update = %q, want %q", got, want)
	}
}

// quiet fails if an update is pending.
func (w *watcher) quiet(t testing.TB) {
	t.Helper()
	select {
	case urls := <-w.updates:
		t.Fatalf("unexpected update %q", urls)
	default:
	}
}

// logs records what a source logs, for tests to wait on.
type logs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}

// count returns how many records at level have a message containing msg.
func (l *logs) count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.Level == level && strings.Contains(r.Message, msg) {
			n++
		}
	}
	return n
}
