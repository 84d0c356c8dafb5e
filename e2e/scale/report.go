// Package scale runs the founding case at a cluster's scale against a real
// Kubernetes control plane (make scale, make scale-quick): for each node
// count and each path, a fresh etcd, kube-apiserver and
// kube-controller-manager (package controlplane), and the sample's
// lockstep-scale program driving N hollow nodes through either lockstep to
// the sample's node controller, which persists Node objects to the API
// server, or Leases and NodeStatus through the API server as Kubernetes'
// kubelets do. Its test (TestScale) runs only when given node counts; this
// file keeps the runs' results and writes the report (docs/scale.md) and
// its plot from them.
package scale

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sample/cmd/lockstep-scale/result"
)

// Result is one run's figures, as lockstep-scale reports them, with what
// the harness adds: one definition, lockstep-scale's.
type Result = result.Result

// controlPlaneCores is the CPU of the processes a cluster runs for node
// liveness: the API server, etcd, kube-controller-manager and, on the
// lockstep path, the node controller.
func controlPlaneCores(r *Result) float64 {
	var c float64
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "node-controller"} {
		c += r.Cores[name]
	}
	return c
}

// LoadResults reads the results file; a missing file holds none.
func LoadResults(path string) ([]Result, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []Result
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// SaveResult adds r to the results file, in place of an earlier run of
// the same path and node count, ordered by path then nodes; a run stopped
// by a signal (r.Stopped) says nothing of what the path holds, and is kept
// only where the file has no record of that path and node count.
func SaveResult(path string, r Result) error {
	rs, err := LoadResults(path)
	if err != nil {
		return err
	}
	same := func(o Result) bool { return o.Path == r.Path && o.Nodes == r.Nodes }
	if r.Stopped && slices.ContainsFunc(rs, same) {
		return nil
	}
	rs = slices.DeleteFunc(rs, same)
	rs = append(rs, r)
	slices.SortFunc(rs, func(a, b Result) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return a.Nodes - b.Nodes
	})
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteReport writes the report of rs to mdPath and its plot to svgPath
// (svgRel is the plot's path relative to the report).
func WriteReport(rs []Result, mdPath, svgPath, svgRel string) error {
	if err := os.WriteFile(svgPath, []byte(plot(rs)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(report(rs, svgRel)), 0o644)
}

func report(rs []Result, svgRel string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# The founding case at a cluster's scale: results\n\n")
	p("Written by `make scale` / `make scale-quick` (e2e/scale); do not edit by hand.\n")
	p("The method is in [design.md](design.md#the-founding-case-at-a-clusters-scale). Each row is one run: a fresh\n")
	p("etcd, kube-apiserver and kube-controller-manager on 127.0.0.1, N hollow nodes under mutual TLS (a certificate\n")
	p("and a source address 127.x.y.z of their own each), on the shared 2-core machine; the load average is the\n")
	p("machine's (1 minute) at the run's start → end. Durable writes are etcd's own count of the keys it wrote\n")
	p("(`etcd_mvcc_put_total`) and the API server's writes of Leases and Nodes (`apiserver_request_total`) over\n")
	p("the steady window, once every node is registered and every pod Running; CPU is each process's over the same\n")
	p("window, from /proc. Control-plane CPU is kube-apiserver + etcd + kube-controller-manager (+ the node\n")
	p("controller on the lockstep path); the hollow nodes are apart. The heartbeat p99 is given over the whole run\n")
	p("(the start's handshakes included) and over the steady window alone; bind → Running over the pods placed\n")
	p("(bound all at once, while every node starts its pods) and over the pods bound one at a time in the steady\n")
	p("window (lockstep's path). Runs recorded before these were split show \"—\" for the steady figures.\n\n")
	p("![durable writes per second and control-plane CPU against N](%s)\n\n", svgRel)

	p("| path | nodes | pods placed | load | registered | etcd puts/s | node writes/s | pod writes/s placing | apiserver | etcd | kube-controller-manager | node controller | hollow nodes | heartbeat p99: run / steady | bind → Running p50 / p99: placing; steady | killed node noticed |\n")
	p("|---|---:|---:|---|---:|---:|---:|---:|---|---|---|---|---|---:|---|---|\n")
	for i := range rs {
		r := &rs[i]
		if r.Failed != "" {
			why := "did not finish"
			if r.Stopped {
				why = "stopped by a signal before it finished (says nothing of what the path holds)"
			}
			p("| %s | %d | — | %s | — | — | — | — | — | — | — | — | — | — | — | %s: %s |\n", r.Path, r.Nodes, load(r), why, r.Failed)
			continue
		}
		nc := "—"
		if _, ok := r.Cores["node-controller"]; ok {
			nc = proc(r, "node-controller")
		}
		kills := ints(r.KillNoticedMs)
		if len(r.KillNoticedInMemoryMs) > 0 {
			kills += " (in memory " + ints(r.KillNoticedInMemoryMs) + ")"
		}
		p("| %s | %d | %d (%d per node%s) | %s | %s | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %.0f / %s ms | %.0f / %.0f ms; %s | %s ms: p99 %.1f s |\n",
			r.Path, r.Nodes, r.PodsPlaced, r.PodsPerNode, bindRate(r), load(r), registered(r), r.EtcdPutsPerSec, r.NodeWritesPerSec,
			r.PlacementPodWritesPerSec, proc(r, "kube-apiserver"), proc(r, "etcd"), proc(r, "kube-controller-manager"), nc,
			proc(r, "hollow-nodes"), r.HeartbeatP99Ms, steadyBeat(r), r.BindToRunningP50Ms, r.BindToRunningP99Ms, steadyBind(r), kills, float64(r.KillNoticedP99Ms)/1000)
	}
	p("\nThe API server's writes in each steady window, per second, by resource and verb:\n\n")
	for i := range rs {
		r := &rs[i]
		if r.Failed != "" {
			continue
		}
		keys := make([]string, 0, len(r.WritesPerSec))
		for k := range r.WritesPerSec {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for j, k := range keys {
			parts[j] = fmt.Sprintf("%s %.2f", k, r.WritesPerSec[k])
		}
		extra := ""
		if r.NodeObjects != nil {
			extra = fmt.Sprintf("; the node controller's Node writes: %d refreshes, %d transitions, %d creates, %d failures",
				r.NodeObjects["refreshes"], r.NodeObjects["transitions"], r.NodeObjects["creates"], r.NodeObjects["failures"])
			if us, ok := r.NodeObjects["meanWriteMicros"]; ok {
				extra += fmt.Sprintf(", %.1f ms each on average", float64(us)/1000)
			}
		}
		if r.Path == "lockstep" {
			extra += fmt.Sprintf("; over the run, %d full resyncs asked of kubelets and %d Unknown nodes resumed without one", r.ResyncsRequested, r.Resumes)
			if r.SteadyHeartbeats > 0 {
				extra += fmt.Sprintf("; %d sessions of live nodes lapsed in the window and %d live nodes went from Ready to not Ready (%d over the run); heartbeats in the window p50 %.1f ms, p99 %.1f ms, largest %.0f ms (session TTL %g s, grace %g s)",
					r.SteadyLapses, r.SteadyFlaps, r.Flaps, r.SteadyHeartbeatP50Ms, r.SteadyHeartbeatP99Ms, r.SteadyHeartbeatMaxMs, r.SessionTTLSeconds, r.NodeGraceSeconds)
			}
		}
		p("- %s, %d nodes (%.0f s): %s%s.\n", r.Path, r.Nodes, r.SteadySeconds, strings.Join(parts, ", "), extra)
	}
	p("\n## P9 and P10\n\n")
	p("| target | figure | measured | met |\n|---|---|---|---|\n")
	ls := largest(rs, "lockstep")
	if ls == nil {
		p("| P9 | — | no lockstep run finished | no |\n")
	} else {
		n := fmt.Sprintf("lockstep, %d nodes, %d pods", ls.Nodes, ls.PodsPlaced)
		if ls.PodsNotRunning > 0 {
			n += fmt.Sprintf(" (%d of them never Running)", ls.PodsNotRunning)
		}
		nc := ls.Cores["node-controller"]
		rss := ls.RSSMiB["node-controller"]
		p("| P9 (5,000 nodes, up to 30 pods each) | scale of the run | %s | %s |\n", n, yes(ls.Nodes >= 5000 && ls.PodsPlaced >= 5000*30 && ls.PodsNotRunning == 0))
		p("| P9: node controller ≤ 1 core, ≤ 2 GiB | %s | %.2f cores, %.0f MiB (%s) | %s |\n", n, nc, rss, gcSettings(ls), yes(nc <= 1 && rss <= 2048))
		if ls.SteadyHeartbeats > 0 {
			p("| P9: heartbeat p99 ≤ 50 ms | %s: the steady window (the whole run's: %.0f ms) | %.1f ms | %s |\n", n, ls.HeartbeatP99Ms, ls.SteadyHeartbeatP99Ms, yes(ls.SteadyHeartbeatP99Ms <= 50))
		} else {
			p("| P9: heartbeat p99 ≤ 50 ms | %s: the whole run, start included | %.0f ms | %s |\n", n, ls.HeartbeatP99Ms, yes(ls.HeartbeatP99Ms <= 50))
		}
		if ls.SteadyBinds > 0 {
			p("| P9: bind → Running p99 ≤ 1 s | %s: %d pods bound in the steady window (the placement's: %.0f ms) | %.0f ms%s | %s |\n", n, ls.SteadyBinds,
				ls.BindToRunningP99Ms, ls.SteadyBindToRunningP99Ms, notRunning(ls.SteadyNotRunning), yes(ls.SteadyBindToRunningP99Ms <= 1000 && ls.SteadyNotRunning == 0))
		} else {
			p("| P9: bind → Running p99 ≤ 1 s | %s: the placement | %.0f ms | %s |\n", n, ls.BindToRunningP99Ms, yes(ls.BindToRunningP99Ms <= 1000))
		}
		p("| P9: killed node noticed ≤ 5 s | %s | p99 %.1f s (in the API server) | %s |\n", n, float64(ls.KillNoticedP99Ms)/1000, yes(ls.KillNoticedP99Ms <= 5000))
	}
	if l, k := common(rs); l == nil {
		p("| P10 | — | no node count ran on both paths | no |\n")
	} else {
		ratio := math.Inf(1)
		if k.EtcdPutsPerSec > 0 {
			ratio = l.EtcdPutsPerSec / k.EtcdPutsPerSec
		}
		nodeRatio := math.Inf(1)
		if k.NodeWritesPerSec > 0 {
			nodeRatio = l.NodeWritesPerSec / k.NodeWritesPerSec
		}
		nd := notDefaults(k)
		p("| P10: node liveness and status writes ≤ 1/20 of Kubernetes' at the same N | %d nodes: etcd puts/s, lockstep / Kubernetes%s | %.1f / %.1f = 1/%.0f | %s |\n",
			l.Nodes, nd, l.EtcdPutsPerSec, k.EtcdPutsPerSec, 1/ratio, p10(ratio <= 1.0/20, k))
		p("| | %d nodes: API server writes of Nodes and Leases/s%s | %.1f / %.1f = 1/%.0f | %s |\n",
			l.Nodes, nd, l.NodeWritesPerSec, k.NodeWritesPerSec, 1/nodeRatio, p10(nodeRatio <= 1.0/20, k))
		p("| P10: a dead node noticed at least as fast as the node lifecycle controller | %d nodes: p99 lockstep / Kubernetes%s | %.1f s / %.1f s | %s |\n",
			l.Nodes, nd, float64(l.KillNoticedP99Ms)/1000, float64(k.KillNoticedP99Ms)/1000, p10(l.KillNoticedP99Ms <= k.KillNoticedP99Ms, k))
	}
	p("\nRuns:\n\n")
	for i := range rs {
		p("- %s, %d nodes, %s: `%s`%s\n", rs[i].Path, rs[i].Nodes, rs[i].Date, rs[i].Command, notDefaults(&rs[i]))
	}
	return b.String()
}

// kubeletLeaseSeconds is how often Kubernetes' kubelets renew their
// Leases by default: P10 compares against it.
const kubeletLeaseSeconds = 10

// notDefaults says, for a Kubernetes run that did not run as Kubernetes
// does by default (make scale-quick's: Leases renewed more often than
// every 10 s, and kube-controller-manager's node lifecycle controller with
// a shorter grace period), with what it ran: P10 compares against the
// defaults, and each of its verdicts on such a run says it was not.
func notDefaults(r *Result) string {
	if r.Path != "kubernetes" {
		return ""
	}
	var what []string
	if s := leaseSeconds(r); s != kubeletLeaseSeconds {
		what = append(what, fmt.Sprintf("Leases renewed every %g s", s))
	}
	if r.ControllerManagerArgs != "" {
		what = append(what, fmt.Sprintf("kube-controller-manager `%s`", r.ControllerManagerArgs))
	}
	if len(what) == 0 {
		return ""
	}
	return " (" + strings.Join(what, "; ") + ": not Kubernetes' defaults)"
}

// p10 is a P10 verdict against the Kubernetes run k: met or not and,
// where k did not run with Kubernetes' defaults, that it is not a verdict
// against them.
func p10(met bool, k *Result) string {
	if notDefaults(k) != "" {
		return yes(met) + " (not Kubernetes' defaults)"
	}
	return yes(met)
}

// leaseSeconds is how often a Kubernetes run's hollow nodes renewed their
// Leases: as recorded or, in a record made before it was, as its command
// set it (--lease-every), else the kubelet's default.
func leaseSeconds(r *Result) float64 {
	if r.LeaseEverySeconds > 0 {
		return r.LeaseEverySeconds
	}
	args := strings.Fields(r.Command)
	for i, a := range args {
		v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "lease-every=")
		if !ok && strings.TrimLeft(a, "-") == "lease-every" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if d, err := time.ParseDuration(v); ok && err == nil {
			return d.Seconds()
		}
	}
	return kubeletLeaseSeconds
}

// gcSettings is the node controller's process's garbage collection
// settings, shown beside its RSS: within a soft memory limit, the RSS
// follows the limit as much as what the process needs, and a higher GOGC
// lets the heap grow further between collections.
func gcSettings(r *Result) string {
	gogc := r.NodeControllerGOGC
	if gogc == 0 {
		gogc = 100
	}
	limit := "no memory limit"
	if r.NodeControllerMemoryLimitMiB > 0 {
		limit = fmt.Sprintf("a %d MiB memory limit", r.NodeControllerMemoryLimitMiB)
	}
	s := fmt.Sprintf("GOGC %d and %s in its process", gogc, limit)
	if r.NodeControllerGOGC == 0 && r.NodeControllerMemoryLimitMiB == 0 {
		s += ": Go's defaults"
	}
	return s
}

// registered is how long the nodes took to register and, where not all
// were Ready at once then, how many were, and how many nodes that were
// not killed were not Ready after the steady window.
func registered(r *Result) string {
	s := fmt.Sprintf("%.0f s", r.RegisterSeconds)
	if r.ReadyAtRegistration > 0 {
		s += fmt.Sprintf(" (%d of %d Ready)", r.ReadyAtRegistration, r.Nodes+len(r.KillNoticedMs))
	}
	if r.LostLiveNodes > 0 {
		s += fmt.Sprintf("; %d live nodes not Ready after the window", r.LostLiveNodes)
	}
	return s
}

// bindRate is how fast the run bound its pods, where it says.
func bindRate(r *Result) string {
	s := ""
	if r.BindsPerSec != 0 {
		s = fmt.Sprintf(", %.0f binds/s", r.BindsPerSec)
	}
	if r.PodsNotRunning > 0 {
		s += fmt.Sprintf("; %d not Running when their count stopped growing", r.PodsNotRunning)
	}
	return s
}

func load(r *Result) string {
	if r.LoadMax > 0 {
		return fmt.Sprintf("%s → %s (peak %.1f)", r.LoadStart, r.LoadEnd, r.LoadMax)
	}
	return r.LoadStart + " → " + r.LoadEnd
}

// steadyBeat is the heartbeat p99 of the steady window, "—" for a run
// recorded before it was measured apart.
func steadyBeat(r *Result) string {
	if r.SteadyHeartbeats == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", r.SteadyHeartbeatP99Ms)
}

// steadyBind is the bind → Running p50 / p99 of the pods bound in the
// steady window, "—" where none were.
func steadyBind(r *Result) string {
	if r.SteadyBinds == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f / %.0f ms (%d pods%s)", r.SteadyBindToRunningP50Ms, r.SteadyBindToRunningP99Ms, r.SteadyBinds, notRunning(r.SteadyNotRunning))
}

func notRunning(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d not Running 30 s after the window", n)
}

func proc(r *Result, name string) string {
	return fmt.Sprintf("%.2f cores, %.0f MiB", r.Cores[name], r.RSSMiB[name])
}

func ints(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

// largest is the finished run of path with the most nodes.
func largest(rs []Result, path string) *Result {
	var best *Result
	for i := range rs {
		if r := &rs[i]; r.Path == path && r.Failed == "" && (best == nil || r.Nodes > best.Nodes) {
			best = r
		}
	}
	return best
}

// common is the finished runs of both paths at the largest node count
// both ran.
func common(rs []Result) (lockstep, kube *Result) {
	for i := range rs {
		r := &rs[i]
		if r.Path != "kubernetes" || r.Failed != "" {
			continue
		}
		for j := range rs {
			l := &rs[j]
			if l.Path == "lockstep" && l.Failed == "" && l.Nodes == r.Nodes && (lockstep == nil || l.Nodes > lockstep.Nodes) {
				lockstep, kube = l, r
			}
		}
	}
	return lockstep, kube
}

// plot draws two panels against N, both paths in each: durable writes per
// second (etcd's puts, log scale) and control-plane CPU (cores).
func plot(rs []Result) string {
	const w, h, pw, ph, left, top = 1010, 400, 380, 280, 70, 50
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	maxN := 0
	for _, r := range rs {
		if r.Failed == "" {
			maxN = max(maxN, r.Nodes)
		}
	}
	if maxN == 0 {
		p(`<text x="20" y="40">no finished run</text></svg>` + "\n")
		return b.String()
	}
	xMax := niceCeil(float64(maxN))
	colors := map[string]string{"lockstep": "#1f77b4", "kubernetes": "#d62728"}
	panels := []struct {
		title string
		value func(*Result) float64
		log   bool
	}{
		{"durable writes/s (etcd puts, steady state)", func(r *Result) float64 { return r.EtcdPutsPerSec }, true},
		{"control-plane CPU (cores, steady state)", controlPlaneCores, false},
	}
	for pi, pan := range panels {
		x0 := left + pi*(pw+100)
		y0 := top
		var yMin, yMax float64
		for i := range rs {
			if rs[i].Failed == "" {
				yMax = max(yMax, pan.value(&rs[i]))
			}
		}
		if pan.log {
			yMin, yMax = 0, math.Ceil(math.Log10(max(yMax, 10)))
		} else {
			yMax = niceCeil(max(yMax, 0.1))
		}
		sx := func(n float64) float64 { return float64(x0) + n/xMax*pw }
		sy := func(v float64) float64 {
			if pan.log {
				v = math.Log10(max(v, 1))
			}
			return float64(y0+ph) - (v-yMin)/(yMax-yMin)*ph
		}
		p(`<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, y0-15, pan.title)
		p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", x0, y0, pw, ph)
		for i := 0; i <= 4; i++ {
			n := xMax * float64(i) / 4
			p(`<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`+"\n", sx(n), y0+ph+16, n)
		}
		p(`<text x="%d" y="%d" text-anchor="middle">hollow nodes (N)</text>`+"\n", x0+pw/2, y0+ph+34)
		if pan.log {
			for e := 0; e <= int(yMax); e++ {
				v := math.Pow(10, float64(e))
				p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, x0+pw, sy(v), sy(v))
				p(`<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", x0-5, sy(v)+4, v)
			}
		} else {
			for i := 0; i <= 4; i++ {
				v := yMax * float64(i) / 4
				p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, x0+pw, sy(v), sy(v))
				p(`<text x="%d" y="%.1f" text-anchor="end">%.3g</text>`+"\n", x0-5, sy(v)+4, v)
			}
		}
		for _, path := range []string{"lockstep", "kubernetes"} {
			var pts []string
			for i := range rs {
				r := &rs[i]
				if r.Path != path || r.Failed != "" {
					continue
				}
				x, y := sx(float64(r.Nodes)), sy(pan.value(r))
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
				p(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s, %d nodes: %.3g</title></circle>`+"\n", x, y, colors[path], path, r.Nodes, pan.value(r))
				p(`<text x="%.1f" y="%.1f" fill="%s" font-size="11">%.3g</text>`+"\n", x+6, y-6, colors[path], pan.value(r))
			}
			if len(pts) > 1 {
				p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), colors[path])
			}
		}
	}
	for i, path := range []string{"lockstep", "kubernetes"} {
		x := left + i*200
		p(`<rect x="%d" y="%d" width="14" height="14" fill="%s"/><text x="%d" y="%d">%s path</text>`+"\n", x, h-22, colors[path], x+20, h-11, path)
	}
	p("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}
