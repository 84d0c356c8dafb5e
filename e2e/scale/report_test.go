package scale

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report compares the two paths at the largest node count both ran,
// marks a target met or missed by its figures, and records a failed run
// as failed; the results file keeps one run per path and node count.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "results.json")
	runs := []Result{
		{Path: "kubernetes", Nodes: 1000, EtcdPutsPerSec: 103.3, NodeWritesPerSec: 103.4, KillNoticedMs: []int64{52000}, KillNoticedP99Ms: 52000,
			ControllerManagerArgs: "--node-monitor-grace-period=8s",
			Cores:                 map[string]float64{"kube-apiserver": 0.5, "etcd": 0.2, "kube-controller-manager": 0.05}},
		{Path: "lockstep", Nodes: 1000, PodsPerNode: 5, PodsPlaced: 5000, PodsNotRunning: 3, BindsPerSec: 612, EtcdPutsPerSec: 3.6, NodeWritesPerSec: 3.4, KillNoticedMs: []int64{3500}, KillNoticedP99Ms: 3500,
			HeartbeatP99Ms: 40, BindToRunningP99Ms: 400, Cores: map[string]float64{"node-controller": 0.1, "kube-apiserver": 0.05}, RSSMiB: map[string]float64{"node-controller": 100}},
		{Path: "lockstep", Nodes: 300, EtcdPutsPerSec: 99},
		// The largest lockstep run: its steady figures are P9's, beside the
		// whole run's and the placement's.
		{Path: "lockstep", Nodes: 5000, PodsPerNode: 5, PodsPlaced: 25000, EtcdPutsPerSec: 17, NodeWritesPerSec: 17, KillNoticedMs: []int64{4100}, KillNoticedP99Ms: 4100,
			HeartbeatP99Ms: 8553, SteadyHeartbeats: 300000, SteadyHeartbeatP50Ms: 1.2, SteadyHeartbeatP99Ms: 48.7, SteadyHeartbeatMaxMs: 300,
			BindToRunningP99Ms: 28808, SteadyBinds: 600, SteadyBindToRunningP50Ms: 150, SteadyBindToRunningP99Ms: 1200, SteadyNotRunning: 2,
			SteadyLapses: 1, SteadyFlaps: 0, Flaps: 3, SessionTTLSeconds: 3, NodeGraceSeconds: 0.25, LoadStart: "0.5", LoadEnd: "1.9", LoadMax: 2.5,
			Cores: map[string]float64{"node-controller": 0.5}, RSSMiB: map[string]float64{"node-controller": 900}, NodeControllerGOGC: 400, NodeControllerMemoryLimitMiB: 1700},
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
	if len(rs) != 6 || rs[3].Nodes != 300 || rs[3].EtcdPutsPerSec != 1.1 || rs[2].Failed != "1200 of 5003 nodes registered" ||
		!rs[1].Stopped || rs[1].Nodes != 2000 {
		t.Fatalf("results kept: %+v", rs)
	}
	report, svg := writeReport(t, dir, rs)
	assertReportHas(t, report,
		"1000 nodes: etcd puts/s, lockstep / Kubernetes (kube-controller-manager `--node-monitor-grace-period=8s`: not Kubernetes' defaults) | 3.6 / 103.3 = 1/29 | yes (not Kubernetes' defaults) |",
		"1000 nodes: p99 lockstep / Kubernetes (kube-controller-manager `--node-monitor-grace-period=8s`: not Kubernetes' defaults) | 3.5 s / 52.0 s | yes (not Kubernetes' defaults) |",
		"P9: heartbeat p99 ≤ 50 ms | lockstep, 5000 nodes, 25000 pods: the steady window (the whole run's: 8553 ms) | 48.7 ms | yes",
		"P9: bind → Running p99 ≤ 1 s | lockstep, 5000 nodes, 25000 pods: 600 pods bound in the steady window (the placement's: 28808 ms) | 1200 ms, 2 not Running 30 s after the window | **no**",
		"P9 (5,000 nodes, up to 30 pods each) | scale of the run | lockstep, 5000 nodes, 25000 pods | **no**",
		"P9: node controller ≤ 1 core, ≤ 2 GiB | lockstep, 5000 nodes, 25000 pods | 0.50 cores, 900 MiB (GOGC 400 and a 1700 MiB memory limit in its process) | yes |",
		"| 8553 / 48.7 ms | 0 / 28808 ms; 150 / 1200 ms (600 pods, 2 not Running 30 s after the window) | 4100 ms: p99 4.1 s |",
		"| 40 / — ms | 0 / 400 ms; — |",
		"0.5 → 1.9 (peak 2.5)",
		"1 sessions of live nodes lapsed in the window and 0 live nodes went from Ready to not Ready (3 over the run); heartbeats in the window p50 1.2 ms, p99 48.7 ms, largest 300 ms (session TTL 3 s, grace 0.25 s)",
		"did not finish: 1200 of 5003 nodes registered",
		"stopped by a signal before it finished (says nothing of what the path holds): context canceled",
		"| lockstep | 1000 | 5000 (5 per node, 612 binds/s; 3 not Running when their count stopped growing) |",
	)
	s, _ := os.ReadFile(svg)
	if !strings.HasPrefix(string(s), "<svg") || strings.Count(string(s), "<circle") != 8 {
		t.Errorf("the plot has not one point per finished run and panel:\n%s", s)
	}
}

// P10 compares against Kubernetes at its defaults: against a Kubernetes
// run whose Leases were renewed more often than every 10 s (recorded, or
// in an older record only in its command) or whose kube-controller-manager
// had other flags, every P10 verdict, the writes' as well as the notice's,
// says it was not; against one at its defaults, none does.
func TestReportP10SaysWhenKubernetesWasNotAtItsDefaults(t *testing.T) {
	lockstep := Result{Path: "lockstep", Nodes: 200, EtcdPutsPerSec: 1, NodeWritesPerSec: 1, KillNoticedMs: []int64{4000}, KillNoticedP99Ms: 4000}
	kube := func(leaseEvery float64, command, kcm string) Result {
		return Result{Path: "kubernetes", Nodes: 200, EtcdPutsPerSec: 100, NodeWritesPerSec: 100, KillNoticedMs: []int64{9000}, KillNoticedP99Ms: 9000,
			LeaseEverySeconds: leaseEvery, Command: command, ControllerManagerArgs: kcm}
	}
	for _, c := range []struct {
		name string
		kube Result
		not  string // what the P10 rows say was not the default; "" for none
	}{
		{"defaults", kube(10, "lockstep-scale --path kubernetes --nodes 200", ""), ""},
		{"an older record at the defaults", kube(0, "lockstep-scale --path kubernetes --nodes 200", ""), ""},
		{"Leases every 2 s", kube(2, "lockstep-scale --path kubernetes --nodes 200 --lease-every=2s", ""), "(Leases renewed every 2 s: not Kubernetes' defaults)"},
		{"an older record's command", kube(0, "lockstep-scale --path kubernetes --nodes 200 --lease-every 2s", ""), "(Leases renewed every 2 s: not Kubernetes' defaults)"},
		{"scale-quick's", kube(2, "", "--node-monitor-grace-period=8s --node-monitor-period=1s"),
			"(Leases renewed every 2 s; kube-controller-manager `--node-monitor-grace-period=8s --node-monitor-period=1s`: not Kubernetes' defaults)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			report, _ := writeReport(t, t.TempDir(), []Result{c.kube, lockstep})
			var rows []string
			for _, line := range strings.Split(report, "\n") {
				if strings.HasPrefix(line, "| P10") || strings.HasPrefix(line, "| | ") {
					rows = append(rows, line)
				}
			}
			require.Len(t, rows, 3, "two write rows and the notice's:\n%s", report)
			for _, row := range rows {
				if c.not == "" {
					assert.True(t, strings.HasSuffix(row, "| yes |"), "a plain verdict: %s", row)
					assert.NotContains(t, row, "not Kubernetes' defaults")
				} else {
					assert.Contains(t, row, " "+c.not+" |")
					assert.True(t, strings.HasSuffix(row, "| yes (not Kubernetes' defaults) |"), "never a plain yes: %s", row)
				}
			}
		})
	}
}

// A lockstep record made before the steady window was measured apart is
// judged on what it has: P9's heartbeat on the whole run, its bind →
// Running on the placement, each saying so.
func TestReportJudgesAnOlderRecordOnTheWholeRun(t *testing.T) {
	dir := t.TempDir()
	rs := []Result{{Path: "lockstep", Nodes: 5000, PodsPerNode: 5, PodsPlaced: 25000, KillNoticedMs: []int64{11800}, KillNoticedP99Ms: 11800,
		HeartbeatP99Ms: 8553, BindToRunningP99Ms: 28808, Cores: map[string]float64{"node-controller": 0.45}, RSSMiB: map[string]float64{"node-controller": 901}}}
	report, _ := writeReport(t, dir, rs)
	assertReportHas(t, report,
		"P9: heartbeat p99 ≤ 50 ms | lockstep, 5000 nodes, 25000 pods: the whole run, start included | 8553 ms | **no**",
		"P9: bind → Running p99 ≤ 1 s | lockstep, 5000 nodes, 25000 pods: the placement | 28808 ms | **no**",
		"P9: killed node noticed ≤ 5 s | lockstep, 5000 nodes, 25000 pods | p99 11.8 s (in the API server) | **no**",
		"P9: node controller ≤ 1 core, ≤ 2 GiB | lockstep, 5000 nodes, 25000 pods | 0.45 cores, 901 MiB (GOGC 100 and no memory limit in its process: Go's defaults) | yes |",
	)
	if strings.Contains(report, "the steady window (the whole run's") {
		t.Errorf("an older record has no steady window to report:\n%s", report)
	}
}

// writeReport writes the report of rs into dir and returns its text and
// its plot's path.
func writeReport(t *testing.T, dir string, rs []Result) (report, svg string) {
	t.Helper()
	md, svg := filepath.Join(dir, "scale.md"), filepath.Join(dir, "scale.svg")
	if err := WriteReport(rs, md, svg, "scale.svg"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), svg
}

// TestRedactKeepsNoLocalPath: a recorded command names no file of the
// machine it ran on, whichever form its flags took.
func TestRedactKeepsNoLocalPath(t *testing.T) {
	got := redact([]string{"--nodes", "5000", "--kubeconfig", "/tmp/x/kubeconfig", "--stall-log",
		"--steady-cpu-profiles=/tmp/x/prof", "--steady-cpu-profiles", "/tmp/y/prof", "--session-ttl", "4s"})
	want := []string{"--nodes", "5000", "--stall-log", "--steady-cpu-profiles=<dir>", "--steady-cpu-profiles=<dir>", "--session-ttl", "4s"}
	if !slices.Equal(got, want) {
		t.Fatalf("redact = %q, want %q", got, want)
	}
}

// assertReportHas checks that report holds each of wants, naming each it
// lacks.
func assertReportHas(t *testing.T, report string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
