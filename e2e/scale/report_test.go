package scale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report compares the two paths at the largest node count both ran,
// marks a target met or missed by its figures, and records a failed run
// as failed; the results file keeps one run per path and node count.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "results.json")
	runs := []Result{
		{Path: "kubernetes", Nodes: 1000, EtcdPutsPerSec: 103.3, NodeWritesPerSec: 103.4, KillNoticedMs: []int64{52000}, KillNoticedP99Ms: 52000,
			Cores: map[string]float64{"kube-apiserver": 0.5, "etcd": 0.2, "kube-controller-manager": 0.05}},
		{Path: "lockstep", Nodes: 1000, PodsPerNode: 5, PodsPlaced: 5000, PodsNotRunning: 3, BindsPerSec: 612, EtcdPutsPerSec: 3.6, NodeWritesPerSec: 3.4, KillNoticedMs: []int64{3500}, KillNoticedP99Ms: 3500,
			HeartbeatP99Ms: 40, BindToRunningP99Ms: 400, Cores: map[string]float64{"node-controller": 0.1, "kube-apiserver": 0.05}, RSSMiB: map[string]float64{"node-controller": 100}},
		{Path: "lockstep", Nodes: 300, EtcdPutsPerSec: 99},
		{Path: "lockstep", Nodes: 300, EtcdPutsPerSec: 1.1},
		{Path: "kubernetes", Nodes: 5000, Failed: "1200 of 5003 nodes registered"},
		// Stopped by a signal: the record of the failed run stays.
		{Path: "kubernetes", Nodes: 5000, Failed: "context canceled", Stopped: true},
		// Stopped, with no earlier record of its own: kept, as stopped.
		{Path: "kubernetes", Nodes: 2000, Failed: "context canceled", Stopped: true},
	}
	for _, r := range runs {
		if err := SaveResult(file, r); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := LoadResults(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 5 || rs[3].Nodes != 300 || rs[3].EtcdPutsPerSec != 1.1 || rs[2].Failed != "1200 of 5003 nodes registered" ||
		!rs[1].Stopped || rs[1].Nodes != 2000 {
		t.Fatalf("results kept: %+v", rs)
	}
	md, svg := filepath.Join(dir, "scale.md"), filepath.Join(dir, "scale.svg")
	if err := WriteReport(rs, md, svg, "scale.svg"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	report := string(b)
	for _, want := range []string{
		"1000 nodes: etcd puts/s, lockstep / Kubernetes | 3.6 / 103.3 = 1/29 | yes",
		"1000 nodes: p99 lockstep / Kubernetes | 3.5 s / 52.0 s | yes",
		"P9: heartbeat p99 ≤ 50 ms | lockstep, 1000 nodes, 5000 pods | 40 ms | yes",
		"P9 (5,000 nodes, up to 30 pods each) | scale of the run | lockstep, 1000 nodes, 5000 pods | **no**",
		"did not finish: 1200 of 5003 nodes registered",
		"stopped by a signal before it finished (says nothing of what the path holds): context canceled",
		"| lockstep | 1000 | 5000 (5 per node, 612 binds/s; 3 not Running when their count stopped growing) |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	s, _ := os.ReadFile(svg)
	if !strings.HasPrefix(string(s), "<svg") || strings.Count(string(s), "<circle") != 6 {
		t.Errorf("the plot has not one point per finished run and panel:\n%s", s)
	}
}
