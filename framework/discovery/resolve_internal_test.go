package discovery

import (
	"slices"
	"strings"
	"testing"
)

func TestResolvConf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		// name names the case.
		name string
		// path is the resolv.conf read.
		path string
		// search is DNSConfig.Search.
		search []string
		// servers, wantSearch and ndots are what the config must hold.
		servers, wantSearch []string
		ndots               int
		// err is a part of the error; "" means none.
		err string
	}{
		{name: "kubernetes pod", path: "testdata/resolv.conf",
			servers:    []string{"10.96.0.10:53", "[fd00::10]:53"},
			wantSearch: []string{"lockstep.svc.cluster.local.", "svc.cluster.local.", "cluster.local."}, ndots: 5},
		{name: "own search list", path: "testdata/resolv.conf", search: []string{"Example.COM"},
			servers: []string{"10.96.0.10:53", "[fd00::10]:53"}, wantSearch: []string{"example.com."}, ndots: 1},
		{name: "no nameserver", path: "testdata/resolv-no-nameserver.conf", err: "names no nameserver"},
		{name: "no file", path: "testdata/absent.conf", err: "no Servers given and open testdata/absent.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := DNSConfig{Host: "nodecontroller", Port: 8443, Search: tc.search, resolvConf: tc.path}
			err := cfg.validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("validate: %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.Servers, tc.servers) || !slices.Equal(cfg.Search, tc.wantSearch) || cfg.ndots != tc.ndots {
				t.Fatalf("servers %q search %q ndots %d, want %q %q %d",
					cfg.Servers, cfg.Search, cfg.ndots, tc.servers, tc.wantSearch, tc.ndots)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	t.Parallel()
	search := []string{"lockstep.svc.cluster.local.", "svc.cluster.local."}
	for _, tc := range []struct {
		// name is the name looked up.
		name string
		// search and ndots are the stub resolver's settings.
		search []string
		ndots  int
		// want are the names asked, in order.
		want []string
	}{
		{name: "nodecontroller", search: search, ndots: 5, want: []string{
			"nodecontroller.lockstep.svc.cluster.local.", "nodecontroller.svc.cluster.local.", "nodecontroller."}},
		{name: "nodecontroller.lockstep", search: search, ndots: 1, want: []string{
			"nodecontroller.lockstep.", "nodecontroller.lockstep.lockstep.svc.cluster.local.",
			"nodecontroller.lockstep.svc.cluster.local."}},
		{name: "NodeController.Lockstep.svc.cluster.local.", search: search, ndots: 5, want: []string{
			"nodecontroller.lockstep.svc.cluster.local."}},
		{name: "nodecontroller.lockstep.svc.cluster.local", ndots: 1, want: []string{
			"nodecontroller.lockstep.svc.cluster.local."}},
		{name: "nodecontroller", ndots: 1, want: []string{"nodecontroller."}},
		{name: "nodecontroller", ndots: 0, search: search, want: []string{
			"nodecontroller.", "nodecontroller.lockstep.svc.cluster.local.", "nodecontroller.svc.cluster.local."}},
	} {
		d := &DNS{cfg: DNSConfig{Search: tc.search, ndots: tc.ndots}}
		if got := d.candidates(tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("candidates(%q) with ndots %d = %q, want %q", tc.name, tc.ndots, got, tc.want)
		}
	}
}

func TestDifference(t *testing.T) {
	t.Parallel()
	added, removed := difference([]string{"a", "b", "c"}, []string{"b", "c", "d", "e"})
	if !slices.Equal(added, []string{"d", "e"}) || !slices.Equal(removed, []string{"a"}) {
		t.Fatalf("added %q removed %q", added, removed)
	}
}
