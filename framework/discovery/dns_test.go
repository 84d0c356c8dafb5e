package discovery_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/discovery"
)

const (
	host    = "nodecontroller.lockstep.svc.cluster.local."
	service = "_https._tcp.nodecontroller.lockstep.svc.cluster.local."
	podA    = "pod-a.nodecontroller.lockstep.svc.cluster.local."
	podB    = "pod-b.nodecontroller.lockstep.svc.cluster.local."
)

// newDNS returns a source asking z, re-resolving every MinInterval, logging
// into the returned logs. Its default query timeout (2 s) is far longer
// than any answer takes on a loaded machine: a timeout the test did not
// cause would log a failure it did not expect.
func newDNS(t testing.TB, z *zone, cfg discovery.DNSConfig) (*discovery.DNS, *logs) {
	t.Helper()
	l := &logs{}
	cfg.Servers = append(cfg.Servers, z.Addr)
	if cfg.Interval == 0 {
		cfg.Interval = discovery.MinInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	cfg.Logger = slog.New(l)
	d, err := discovery.NewDNS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, l
}

// settle waits until the source has resolved n more times (each
// resolution asks at least one question) and checks it reported nothing.
func settle(t *testing.T, z *zone, w *watcher, n int) {
	t.Helper()
	from := z.total()
	require.Eventually(t, func() bool { return z.total() >= from+n }, 5*time.Second, 5*time.Millisecond, fmt.Sprintf("%d more queries", n))
	w.quiet(t)
}

func TestDNSFollowsAddresses(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setAddrs(host, "10.0.0.7", "fd00::7")
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443})
	w := watch(t, d)

	w.expect(t, "https://10.0.0.7:8443", "https://[fd00::7]:8443")
	settle(t, z, w, 6)

	z.setAddrs(host, "10.0.0.7", "10.0.0.8", "fd00::7")
	w.expect(t, "https://10.0.0.7:8443", "https://10.0.0.8:8443", "https://[fd00::7]:8443")

	z.setAddrs(host, "10.0.0.8")
	w.expect(t, "https://10.0.0.8:8443")
	settle(t, z, w, 6)
}

func TestDNSNetwork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		// network is DNSConfig.Network.
		network string
		// scheme is DNSConfig.Scheme.
		scheme string
		// want is the first update.
		want []string
		// asked are the query kinds the zone must have seen, and
		// notAsked those it must not have.
		asked, notAsked []string
	}{
		{network: "", scheme: "", want: []string{"https://10.0.0.7:8443", "https://[fd00::7]:8443"},
			asked: []string{"udp A", "udp AAAA"}},
		{network: "ip4", scheme: "http", want: []string{"http://10.0.0.7:8443"},
			asked: []string{"udp A"}, notAsked: []string{"udp AAAA"}},
		{network: "ip6", scheme: "https", want: []string{"https://[fd00::7]:8443"},
			asked: []string{"udp AAAA"}, notAsked: []string{"udp A"}},
	} {
		t.Run("network="+tc.network, func(t *testing.T) {
			t.Parallel()
			z := startZone(t)
			z.setAddrs(host, "10.0.0.7", "fd00::7")
			d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443, Network: tc.network, Scheme: tc.scheme})
			watch(t, d).expect(t, tc.want...)
			for _, k := range tc.asked {
				if z.queries(k) == 0 {
					t.Errorf("no %s query", k)
				}
			}
			for _, k := range tc.notAsked {
				if n := z.queries(k); n != 0 {
					t.Errorf("%d %s queries, want none", n, k)
				}
			}
		})
	}
}

func TestDNSKeepsLastSetWhenResolutionFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		// name names the failure.
		name string
		// fail makes the zone fail and returns a function that makes it
		// answer again.
		fail func(t *testing.T, z *zone) (restore func() *zone)
	}{
		{name: "SERVFAIL", fail: mode(serverFailure)},
		{name: "REFUSED", fail: mode(refusing)},
		{name: "no answer", fail: mode(silent)},
		{name: "server gone", fail: func(t *testing.T, z *zone) func() *zone {
			z.stop()
			return func() *zone {
				back := startZoneAt(t, z.Addr)
				back.setAddrs(host, "10.0.0.9")
				return back
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			z := startZone(t)
			z.setAddrs(host, "10.0.0.7", "10.0.0.8")
			// Short enough that the silent server's three timeouts pass
			// quickly, long enough that an answering one is never late.
			d, l := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443, Timeout: 300 * time.Millisecond})
			w := watch(t, d)
			w.expect(t, "https://10.0.0.7:8443", "https://10.0.0.8:8443")

			restore := tc.fail(t, z)
			require.Eventually(t, func() bool {
				return l.count(slog.LevelWarn, "failed") == 1 && l.count(slog.LevelDebug, "failed again") >= 2
			}, 5*time.Second, 5*time.Millisecond, "three failed resolutions")
			w.quiet(t)

			restore()
			w.expect(t, "https://10.0.0.9:8443")
			if n := l.count(slog.LevelInfo, "recovered"); n != 1 {
				t.Errorf("%d recovery logs, want 1", n)
			}
			if n := l.count(slog.LevelWarn, "failed"); n != 1 {
				t.Errorf("%d warnings, want 1: one per outage", n)
			}
		})
	}
}

// mode returns a failure that switches z to m, and back to answering with
// other records.
func mode(m zoneMode) func(t *testing.T, z *zone) func() *zone {
	return func(t *testing.T, z *zone) func() *zone {
		z.setMode(m)
		return func() *zone {
			z.setAddrs(host, "10.0.0.9")
			z.setMode(answering)
			return z
		}
	}
}

func TestDNSFirstResolutionFailing(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setAddrs(host, "10.0.0.7")
	z.setMode(serverFailure)
	d, l := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443})
	w := watch(t, d)
	require.Eventually(t, func() bool { return l.count(slog.LevelWarn, "failed") == 1 }, 5*time.Second, 5*time.Millisecond, "a failed resolution")
	settle(t, z, w, 4)
	z.setMode(answering)
	w.expect(t, "https://10.0.0.7:8443")
}

func TestDNSEmptiesWhenTheNameHasNoRecords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		// name names the answer.
		name string
		// empty makes the zone give that answer about host.
		empty func(t *testing.T, z *zone)
	}{
		{name: "NXDOMAIN", empty: func(t *testing.T, z *zone) { z.remove(host) }},
		{name: "no address records", empty: func(_ *testing.T, z *zone) { z.setAddrs(host) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			z := startZone(t)
			z.setAddrs(host, "10.0.0.7")
			d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443})
			w := watch(t, d)
			w.expect(t, "https://10.0.0.7:8443")

			tc.empty(t, z)
			w.expect(t)
			settle(t, z, w, 4)

			z.setAddrs(host, "10.0.0.8")
			w.expect(t, "https://10.0.0.8:8443")
		})
	}
}

func TestDNSReportsAnEmptyFirstAnswer(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443})
	w := watch(t, d)
	w.expect(t)
	z.setAddrs(host, "10.0.0.7")
	w.expect(t, "https://10.0.0.7:8443")
}

func TestDNSFollowsSRV(t *testing.T) {
	t.Parallel()
	for _, glue := range []bool{false, true} {
		t.Run(fmt.Sprintf("glue=%v", glue), func(t *testing.T) {
			t.Parallel()
			z := startZone(t)
			z.setGlue(glue)
			z.setAddrs(podA, "10.0.0.7", "fd00::7")
			z.setAddrs(podB, "10.0.0.8")
			z.setSRV(t, service, podA+":8443", podB+":8443")
			d, _ := newDNS(t, z, discovery.DNSConfig{Service: service})
			w := watch(t, d)
			w.expect(t, "https://10.0.0.7:8443", "https://10.0.0.8:8443", "https://[fd00::7]:8443")

			// A port changes.
			z.setSRV(t, service, podA+":8443", podB+":9443")
			w.expect(t, "https://10.0.0.7:8443", "https://10.0.0.8:9443", "https://[fd00::7]:8443")

			// A target's address changes.
			z.setAddrs(podB, "10.0.0.18")
			w.expect(t, "https://10.0.0.18:9443", "https://10.0.0.7:8443", "https://[fd00::7]:8443")

			// A target goes and a new one with two ports comes.
			podC := "pod-c.nodecontroller.lockstep.svc.cluster.local."
			z.setAddrs(podC, "10.0.0.9")
			z.setSRV(t, service, podB+":9443", podC+":8443", podC+":8444")
			w.expect(t, "https://10.0.0.18:9443", "https://10.0.0.9:8443", "https://10.0.0.9:8444")

			// A target without addresses, and "." (no service), add nothing.
			z.setSRV(t, service, podB+":9443", "pod-gone.nodecontroller.lockstep.svc.cluster.local.:8443", ".:8443")
			w.expect(t, "https://10.0.0.18:9443")

			// The Service is deleted.
			z.remove(service)
			w.expect(t)

			if !glue && z.queries("udp A")+z.queries("udp AAAA") == 0 {
				t.Error("targets were not resolved")
			}
		})
	}
}

func TestDNSSRVUsesGlueRecords(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setGlue(true)
	z.setAddrs(podA, "10.0.0.7")
	z.setAddrs(podB, "10.0.0.8")
	z.setSRV(t, service, podA+":8443", podB+":8443")
	d, _ := newDNS(t, z, discovery.DNSConfig{Service: service, Network: "ip4"})
	w := watch(t, d)
	w.expect(t, "https://10.0.0.7:8443", "https://10.0.0.8:8443")
	settle(t, z, w, 3)
	if n := z.queries("udp A"); n != 0 {
		t.Errorf("%d A queries: targets with addresses in the additional section were asked again", n)
	}
}

func TestDNSSRVTargetNames(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setSRV(t, service, "Pod-A.nodecontroller.lockstep.svc.cluster.local.:8443", "pod-b.nodecontroller.lockstep.svc.cluster.local:9443")
	d, _ := newDNS(t, z, discovery.DNSConfig{Service: service, TargetNames: true})
	w := watch(t, d)
	w.expect(t, "https://pod-a.nodecontroller.lockstep.svc.cluster.local:8443",
		"https://pod-b.nodecontroller.lockstep.svc.cluster.local:9443")
	if n := z.queries("udp A") + z.queries("udp AAAA"); n != 0 {
		t.Errorf("%d address queries, want none: targets are kept as names", n)
	}
}

func TestDNSLargeAnswerOverTCP(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	var addrs, want []string
	for i := range 300 {
		a := fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)
		addrs = append(addrs, a)
		want = append(want, "https://"+a+":8443")
	}
	slices.Sort(want)
	z.setAddrs(host, addrs...)
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443, Network: "ip4"})
	watch(t, d).expect(t, want...)
	if z.queries("tcp A") == 0 {
		t.Error("no query over TCP: the answer cannot fit in UDP")
	}
}

func TestDNSAsksTheNextServer(t *testing.T) {
	t.Parallel()
	dead := startZone(t)
	dead.setMode(serverFailure)
	z := startZone(t)
	z.setAddrs(host, "10.0.0.7")
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443, Network: "ip4", Servers: []string{dead.Addr}})
	watch(t, d).expect(t, "https://10.0.0.7:8443")
	if dead.queries("udp A") == 0 {
		t.Error("the first server was not asked")
	}
}

func TestDNSSearchList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		// name is DNSConfig.Host.
		name string
		// search is DNSConfig.Search.
		search []string
		// records are the names that have addresses, and the address of
		// each.
		records map[string]string
		// want is the first update.
		want []string
	}{
		{name: "nodecontroller", search: []string{"lockstep.svc.cluster.local", "svc.cluster.local"},
			records: map[string]string{host: "10.0.0.7"},
			want:    []string{"https://10.0.0.7:8443"}},
		{name: "nodecontroller.lockstep", search: []string{"svc.cluster.local"},
			records: map[string]string{host: "10.0.0.7"},
			want:    []string{"https://10.0.0.7:8443"}},
		{name: "nodecontroller.lockstep", search: []string{"svc.cluster.local"},
			records: map[string]string{host: "10.0.0.7", "nodecontroller.lockstep.": "10.0.0.8"},
			want:    []string{"https://10.0.0.8:8443"}},
		{name: "nodecontroller.", search: []string{"lockstep.svc.cluster.local"},
			records: map[string]string{host: "10.0.0.7"},
			want:    []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			z := startZone(t)
			for name, addr := range tc.records {
				z.setAddrs(name, addr)
			}
			d, _ := newDNS(t, z, discovery.DNSConfig{Host: tc.name, Port: 8443, Network: "ip4", Search: tc.search})
			watch(t, d).expect(t, tc.want...)
		})
	}
}

func TestDNSResolvesOncePerInterval(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setAddrs(host, "10.0.0.7")
	clock := clockwork.NewFakeClock()
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443, Network: "ip4",
		Interval: time.Minute, Clock: clock})
	// Three clients share the source: one loop asks for all of them.
	ws := []*watcher{watch(t, d), watch(t, d), watch(t, d)}
	for _, w := range ws {
		w.expect(t, "https://10.0.0.7:8443")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := z.total(); n != 1 {
		t.Fatalf("%d queries for three listeners, want 1", n)
	}

	z.setAddrs(host, "10.0.0.8")
	clock.Advance(time.Minute - time.Nanosecond)
	if n := z.total(); n != 1 {
		t.Fatalf("%d queries before the interval passed, want 1", n)
	}
	clock.Advance(time.Nanosecond)
	for _, w := range ws {
		w.expect(t, "https://10.0.0.8:8443")
	}
	if n := z.total(); n != 2 {
		t.Fatalf("%d queries after one interval, want 2", n)
	}
}

func TestDNSListenerJoiningLateGetsTheSet(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setAddrs(host, "10.0.0.7")
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443})
	watch(t, d).expect(t, "https://10.0.0.7:8443")
	watch(t, d).expect(t, "https://10.0.0.7:8443")
}

func TestDNSRunReturnsPromptly(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setMode(silent)
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, func([]string) { t.Error("update from a silent server") })
	}()
	require.Eventually(t, func() bool { return z.total() > 0 }, 5*time.Second, 5*time.Millisecond, "a query")
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Run still waits for its query a second after its context ended")
	}
	t.Logf("returned %v after cancel", time.Since(start))

	// Another Run after the last one stopped starts afresh.
	z.setMode(answering)
	z.setAddrs(host, "10.0.0.7")
	watch(t, d).expect(t, "https://10.0.0.7:8443")
}

func TestDNSUpdatesAreTheirOwn(t *testing.T) {
	t.Parallel()
	z := startZone(t)
	z.setAddrs(host, "10.0.0.7")
	d, _ := newDNS(t, z, discovery.DNSConfig{Host: host, Port: 8443, Network: "ip4"})
	first := watch(t, d).next(t)
	first[0] = "https://mutated"
	watch(t, d).expect(t, "https://10.0.0.7:8443")
}

func TestNewDNSRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		// cfg is the configuration given; Servers defaults to 127.0.0.1.
		cfg discovery.DNSConfig
		// want is a part of the error; "" means no error.
		want string
	}{
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 8443}},
		{cfg: discovery.DNSConfig{Service: "_https._tcp.a.example"}},
		{cfg: discovery.DNSConfig{}, want: "one of Host and Service is required"},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Service: "_x._tcp.a.example"}, want: "exclusive"},
		{cfg: discovery.DNSConfig{Host: "a.example"}, want: "Port 0 is not a port"},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 70000}, want: "Port 70000 is not a port"},
		{cfg: discovery.DNSConfig{Host: "10.0.0.7", Port: 1}, want: "use Static"},
		{cfg: discovery.DNSConfig{Host: "a..example", Port: 1}, want: "not a domain name"},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, TargetNames: true}, want: "TargetNames applies to Service"},
		{cfg: discovery.DNSConfig{Service: "_x._tcp.a.example", Port: 1}, want: "Port applies to Host only"},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Scheme: "grpc"}, want: `Scheme "grpc"`},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Network: "tcp"}, want: `Network "tcp"`},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Interval: time.Millisecond}, want: "below the minimum"},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Interval: discovery.MinInterval}},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Timeout: -time.Second}, want: "negative"},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Servers: []string{"dns.example:53"}}, want: `server "dns.example:53"`},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Servers: []string{"10.96.0.10:0"}}, want: "not an IP address"},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Servers: []string{"10.96.0.10", "[fd00::10]:5353", "fd00::11"}}},
		{cfg: discovery.DNSConfig{Host: "a.example", Port: 1, Search: []string{"bad..example"}}, want: "Search domain"},
		{cfg: discovery.DNSConfig{Port: 70000, Scheme: "ftp"}, want: "Scheme"},
	} {
		name := tc.want
		if name == "" {
			name = "valid"
		}
		t.Run(name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.Servers == nil {
				cfg.Servers = []string{"127.0.0.1"}
			}
			_, err := discovery.NewDNS(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("NewDNS: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("NewDNS accepted %+v", tc.cfg)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("NewDNS: %v, want an error containing %q", err, tc.want)
			case err != nil && !strings.HasPrefix(err.Error(), "lockstep: "):
				t.Fatalf("error %q lacks the lockstep prefix", err)
			}
		})
	}
}

func TestStatic(t *testing.T) {
	t.Parallel()
	urls := []string{"https://10.0.0.7:8443", "https://10.0.0.8:8443"}
	src := discovery.Static(urls...)
	urls[0] = "https://mutated"
	w := watch(t, src)
	w.expect(t, "https://10.0.0.7:8443", "https://10.0.0.8:8443")
	w.stop(t) // Run has returned: it made no update but the first
	w.quiet(t)
}
