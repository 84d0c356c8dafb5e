package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// componentOrder is the order rows and checks go in.
var componentOrder = []string{NodeController, Kubelet, Scheduler, Extender, LegacyExtender}

// viewGrace is how long after a server (re)started a client's view of it
// may still show the session it held with the previous process: until its
// next heartbeat or call learns the session is gone.
const viewGrace = time.Second

func (r *processRun) addRow(label string, kind upgradesim.RowKind, versions []string) {
	r.rows[label] = &upgradesim.Row{Label: label, Kind: kind, Versions: versions}
	r.rowOrder = append(r.rowOrder, label)
}

// setState extends a row's last segment, or starts a new one when the
// state changed. Callers hold r.mu.
func (r *processRun) setState(label string, at time.Duration, state, value string) {
	row := r.rows[label]
	if n := len(row.Segments); n > 0 {
		last := &row.Segments[n-1]
		last.To = at
		if last.State == state && last.Value == value {
			return
		}
	}
	row.Segments = append(row.Segments, upgradesim.Segment{From: at, To: at, State: state, Value: value})
}

func (r *processRun) sampleLoop(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		r.sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe is what one sample read from one process.
type probe struct {
	p *proc
	// answered is set when both /readyz and /status answered: a probe
	// that timed out or was refused says nothing of the process's state,
	// only that the observer did not learn it (on a loaded machine a
	// race-detected process can take longer than httpClient's timeout).
	answered  bool
	ready     bool
	readyText string
	status    json.RawMessage
	metrics   Metrics
}

// sampleRound is one completed round of samples: when it began, in which
// step, and whether every running process answered it and every pair had
// settled (see settledPairs); why says what was not.
type sampleRound struct {
	at      time.Duration
	step    int
	settled bool
	why     string
}

// sample observes every process once.
func (r *processRun) sample() {
	at := r.now()
	r.mu.Lock()
	procs := map[string]*proc{}
	for c, p := range r.procs {
		procs[c] = p
	}
	step := r.step
	r.mu.Unlock()
	probes := map[string]*probe{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for c, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := &probe{p: p}
			var readyErr, statusErr error
			pr.ready, pr.readyText, readyErr = readyz(p.addr)
			pr.status, statusErr = getStatus(p.addr)
			pr.answered = readyErr == nil && statusErr == nil
			if c == Kubelet || c == Scheduler {
				pr.metrics, _ = Scrape(httpClient, "http://"+p.addr+"/metrics")
			}
			mu.Lock()
			probes[c] = pr
			mu.Unlock()
		}()
	}
	wg.Wait()
	agreed := map[string]map[string][]string{}
	for _, c := range componentOrder {
		obs := Observation{At: at, Step: step, Component: c}
		pr := probes[c]
		var draining bool
		r.mu.Lock()
		switch {
		case pr == nil:
			r.setState(c, at, "down", "")
		case pr.p.draining:
			draining = true
			r.setState(c, at, "draining", pr.p.version)
		default:
			r.setState(c, at, "up", pr.p.version)
		}
		r.mu.Unlock()
		if pr != nil && !pr.answered && !draining {
			// Not an observation: the process's state is unknown, not
			// "not ready, no sessions"; the rows keep their last state.
			continue
		}
		if pr != nil {
			// draining is written under r.mu by stopProc: read above.
			obs.Version, obs.Draining, obs.Ready, obs.ReadyText = pr.p.version, draining, pr.ready, pr.readyText
			obs.Agreed = agreedFrom(c, pr.status)
			if pr.metrics != nil {
				r.recordCalls(pr.p, pr.metrics)
			}
		}
		r.mu.Lock()
		for _, pair := range pairs {
			if pair.client != c {
				continue
			}
			label := pair.client + "→" + pair.server
			switch {
			case pr == nil || pr.p.draining:
				r.setState(label, at, "down", "")
			case len(obs.Agreed[pair.server]) > 0:
				r.setState(label, at, "agreed", strings.Join(obs.Agreed[pair.server], ","))
			default:
				r.setState(label, at, "blocked", "")
			}
		}
		r.observations = append(r.observations, obs)
		agreed[c] = obs.Agreed
		if nc := procs[NodeController]; c == Kubelet && pr != nil && !draining && len(obs.Agreed[NodeController]) > 0 && nc != nil && !nc.draining {
			r.outages.heard(at)
		}
		r.mu.Unlock()
		if pr != nil && !draining {
			r.checkVersions(at, c, pr.p, obs.Agreed, procs)
		}
	}
	why := settledPairs(probes, agreed)
	r.mu.Lock()
	r.rounds = append(r.rounds, sampleRound{at: at, step: step, settled: why == "", why: why})
	r.mu.Unlock()
}

// settledPairs says how the system sampled differs from a settled one, in
// which every running process answered and every client that is not
// draining holds sessions with each server it follows that is not
// draining at exactly the highest version both speak, or at none when
// they share none; "" when it is settled. Each upgrade leaves the system
// unsettled until the clients' next handshakes: how long that takes
// depends on the machine, so the plan's holds wait for it (see hold)
// rather than for a fixed time.
func settledPairs(probes map[string]*probe, agreed map[string]map[string][]string) string {
	var why []string
	for _, c := range componentOrder {
		if pr := probes[c]; pr != nil && !pr.answered && !pr.p.draining {
			why = append(why, c+" did not answer")
		}
	}
	for _, pair := range pairs {
		cp, sp := probes[pair.client], probes[pair.server]
		if cp == nil || sp == nil || cp.p.draining || sp.p.draining || !cp.answered {
			continue
		}
		var want []string
		if v := highestShared(speaksByVersion[pair.client][cp.p.version][pair.contract],
			speaksByVersion[pair.server][sp.p.version][pair.contract]); v != "" {
			want = []string{pair.contract + " " + v}
		}
		if got := agreed[pair.client][pair.server]; !slices.Equal(got, want) {
			why = append(why, fmt.Sprintf("%s %s holds %v with %s %s, not %v", pair.client, cp.p.version, got, pair.server, sp.p.version, want))
		}
	}
	return strings.Join(why, "; ")
}

// highestShared is the highest of the versions both a and b list ("" when
// none): the one a handshake between them agrees on.
func highestShared(a, b []string) string {
	best := ""
	for _, v := range a {
		if contains(b, v) && (best == "" || semverLess(best, v)) {
			best = v
		}
	}
	return best
}

// semverLess orders the sample's major.minor.patch versions.
func semverLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// isDraining reads p.draining, which stopProc writes under r.mu.
func (r *processRun) isDraining(p *proc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return p.draining
}

// endpointView is the part of an endpoint's status the process mode reads.
type endpointView struct {
	State   string `json:"state"`
	Version string `json:"version"`
}

// agreedFrom reads, from a client component's /status, the contract
// versions it holds sessions at with each server component.
func agreedFrom(component string, status json.RawMessage) map[string][]string {
	out := map[string][]string{}
	if len(status) == 0 {
		return out
	}
	versions := func(contract string, eps []endpointView) []string {
		seen := map[string]bool{}
		var vs []string
		for _, e := range eps {
			if e.State == "ready" && e.Version != "" && !seen[e.Version] {
				seen[e.Version] = true
				vs = append(vs, contract+" "+e.Version)
			}
		}
		sort.Strings(vs)
		return vs
	}
	switch component {
	case Kubelet:
		var st struct {
			Endpoints []endpointView `json:"endpoints"`
		}
		if json.Unmarshal(status, &st) == nil {
			out[NodeController] = versions("nodestatus", st.Endpoints)
		}
	case Scheduler:
		var st struct {
			NodeController []endpointView            `json:"nodeController"`
			Extenders      map[string][]endpointView `json:"extenders"`
		}
		if json.Unmarshal(status, &st) == nil {
			out[NodeController] = versions("nodehealth", st.NodeController)
			for name, eps := range st.Extenders {
				out[name] = versions("extender", eps)
			}
		}
	}
	return out
}

// checkVersions holds a client's sessions to the versions both sides
// speak. A server that (re)started within viewGrace is not checked: the
// client may not have learnt yet that its previous process is gone.
func (r *processRun) checkVersions(at time.Duration, client string, cp *proc, agreed map[string][]string, procs map[string]*proc) {
	for server, values := range agreed {
		sp := procs[server]
		for _, value := range values {
			contract, version, _ := strings.Cut(value, " ")
			if !contains(speaksByVersion[client][cp.version][contract], version) {
				r.violate(upgradesim.InvariantVersions, "%s %s holds a session at %s, which it does not speak", client, cp.version, value)
			}
			if sp == nil || r.isDraining(sp) || at-sp.from < viewGrace {
				continue
			}
			if !contains(speaksByVersion[server][sp.version][contract], version) {
				r.violate(upgradesim.InvariantVersions, "%s %s holds a session at %s with %s %s, which does not speak it",
					client, cp.version, value, server, sp.version)
			}
		}
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// callCounts reads a caller's counters of its calls to server: ok,
// failed, abandoned (still waiting when the caller stopped).
func callCounts(client, server string, m Metrics) (ok, failed, abandoned float64) {
	if client == Kubelet {
		return m.Sum("sample_kubelet_reports_total", map[string]string{"outcome": "ok"}),
			m.Sum("sample_kubelet_reports_total", map[string]string{"outcome": "failed"}), 0
	}
	all := m.Sum("sample_scheduler_calls_total", map[string]string{"peer": server})
	ok = m.Sum("sample_scheduler_calls_total", map[string]string{"peer": server, "code": "ok"})
	abandoned = m.Sum("sample_scheduler_calls_total", map[string]string{"peer": server, "code": "abandoned"})
	return ok, all - ok - abandoned, abandoned
}

// recordCalls adds the calls a caller made since its last scrape to the
// timeline's call series.
func (r *processRun) recordCalls(p *proc, m Metrics) {
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pair := range pairs {
		if pair.client != p.component {
			continue
		}
		ok, failed, abandoned := callCounts(pair.client, pair.server, m)
		ok0, failed0, abandoned0 := callCounts(pair.client, pair.server, p.last)
		cs := r.calls[pair.client+"→"+pair.server]
		for range int(ok - ok0) {
			cs.OK = append(cs.OK, at)
		}
		for range int(failed - failed0) {
			cs.Failed = append(cs.Failed, at)
		}
		for range int(abandoned - abandoned0) {
			cs.Abandoned = append(cs.Abandoned, at)
		}
	}
	p.last = m
}

// checkRunning checks, while everything still runs, that every pair
// resumed and the node controller knows every node.
func (r *processRun) checkRunning() map[string][]string {
	r.mu.Lock()
	procs := map[string]*proc{}
	for c, p := range r.procs {
		procs[c] = p
	}
	r.mu.Unlock()
	final := map[string][]string{}
	for _, pair := range pairs {
		cp := procs[pair.client]
		if cp == nil {
			r.violate("sessions-resumed", "%s is not running at the end", pair.client)
			continue
		}
		var agreed []string
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			st, _ := getStatus(cp.addr)
			if agreed = agreedFrom(pair.client, st)[pair.server]; len(agreed) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		final[pair.client+"→"+pair.server] = agreed
		if len(agreed) == 0 {
			r.violate("sessions-resumed", "%s %s holds no session with %s at the end", pair.client, cp.version, pair.server)
		}
	}
	if nc := procs[NodeController]; nc != nil {
		var st struct {
			Nodes []struct {
				NodeName string `json:"nodeName"`
				State    string `json:"state"`
			} `json:"nodes"`
			Pods []nodecontroller.Pod `json:"pods"`
		}
		raw, err := getStatus(nc.addr)
		if err == nil {
			err = json.Unmarshal(raw, &st)
		}
		ready := 0
		for _, n := range st.Nodes {
			if n.State == "Ready" {
				ready++
			}
		}
		if err != nil || len(st.Nodes) != r.opts.Nodes || ready != r.opts.Nodes {
			r.violate("every-node-reported", "the node controller knows %d of %d nodes, %d Ready (%v)", len(st.Nodes), r.opts.Nodes, ready, err)
		}
		if err == nil {
			r.mu.Lock()
			outages := slices.Clone(r.outages)
			r.mu.Unlock()
			outage := func(from, to time.Time) time.Duration { return outages.within(from.Sub(r.start), to.Sub(r.start)) }
			if msg := podsRunWherePlaced(st.Pods, time.Now(), runBound, outage); msg != "" {
				r.violate("pods-run-where-placed", "%s", msg)
			}
		}
	}
	return final
}

// checkIncarnations checks what every process counted, once all stopped.
func (r *processRun) checkIncarnations() {
	var lastScheduler *Incarnation
	for i := range r.incarnations {
		inc := &r.incarnations[i]
		if inc.Metrics == nil {
			r.violate(upgradesim.InvariantSteps, "%s %s: no metrics were scraped before it stopped", inc.Component, inc.Version)
			continue
		}
		switch inc.Component {
		case Kubelet:
			if n := inc.Metrics.Sum("sample_kubelet_reports_total", map[string]string{"outcome": "failed"}); n > 0 {
				r.violate("reports-never-failed", "kubelet %s: %v reports failed", inc.Version, n)
			}
		case Scheduler:
			lastScheduler = inc
			if _, failed, _ := callCounts(Scheduler, LegacyExtender, inc.Metrics); failed > 0 {
				r.violate(upgradesim.InvariantExternalUninterrupted, "scheduler %s: %v calls to the legacy extender failed", inc.Version, failed)
			}
		case LegacyExtender:
			if n := inc.Metrics.Sum("sample_extender_requests_total", map[string]string{"outcome": "error"}); n > 0 {
				r.violate(upgradesim.InvariantExternalUninterrupted, "the legacy extender answered %v requests with an error", n)
			}
		}
	}
	if lastScheduler == nil || lastScheduler.Metrics.Sum("sample_scheduler_pods_total", map[string]string{"outcome": "scheduled"}) == 0 {
		r.violate("pods-scheduled-after-upgrade", "the last scheduler placed no pod")
	}
}

// report builds upgradesim's report of the run.
func (r *processRun) report(final map[string]string, agreed map[string][]string) *upgradesim.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.now()
	tl := &upgradesim.Timeline{Plan: "rolling upgrade v1 → v2 (processes)", Duration: end, Steps: r.steps}
	for _, label := range r.rowOrder {
		row := *r.rows[label]
		row.Segments = append([]upgradesim.Segment(nil), row.Segments...)
		if n := len(row.Segments); n > 0 {
			row.Segments[n-1].To = end
		}
		tl.Rows = append(tl.Rows, row)
	}
	labels := make([]string, 0, len(r.calls))
	for l := range r.calls {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		tl.Calls = append(tl.Calls, *r.calls[l])
	}
	for _, v := range r.violations {
		tl.Marks = append(tl.Marks, upgradesim.Mark{At: v.At, Kind: "violation", Text: v.Invariant + ": " + v.Message})
	}
	return &upgradesim.Report{Plan: upgradesim.Plan{Name: tl.Plan}, Duration: end, Violations: append([]upgradesim.Violation(nil), r.violations...),
		Final: final, Agreed: agreed, Timeline: tl}
}

// outcomes says what each process counted.
func (r *processRun) outcomes() []string {
	incs := append([]Incarnation(nil), r.incarnations...)
	rank := func(c string) int { return slices.Index(componentOrder, c) }
	sort.SliceStable(incs, func(i, j int) bool {
		if rank(incs[i].Component) != rank(incs[j].Component) {
			return rank(incs[i].Component) < rank(incs[j].Component)
		}
		return incs[i].From < incs[j].From
	})
	var out []string
	for _, inc := range incs {
		m := inc.Metrics
		s := func(name string, match map[string]string) int { return int(m.Sum(name, match)) }
		var line string
		switch inc.Component {
		case Kubelet:
			line = fmt.Sprintf("%d status and %d pod reports acknowledged, %d failed; calls waited %.2fs for a compatible node controller (summed over nodes); %d resyncs asked of it",
				s("sample_kubelet_reports_total", map[string]string{"kind": "status", "outcome": "ok"}),
				s("sample_kubelet_reports_total", map[string]string{"kind": "pods", "outcome": "ok"}),
				s("sample_kubelet_reports_total", map[string]string{"outcome": "failed"}),
				m.Sum("lockstep_blocked_seconds_sum", map[string]string{"contract": "nodestatus"}),
				s("sample_kubelet_resyncs_total", nil))
		case NodeController:
			line = fmt.Sprintf("%d reports at 1.0.0, %d at 2.0.0; %d resyncs requested",
				s("sample_nodecontroller_reports_total", map[string]string{"version": "1.0.0"}),
				s("sample_nodecontroller_reports_total", map[string]string{"version": "2.0.0"}),
				s("sample_nodecontroller_resyncs_requested_total", nil))
		case Scheduler:
			line = fmt.Sprintf("%d pods scheduled, %d unschedulable, %d failed; legacy extender called %d times at 1.0.0",
				s("sample_scheduler_pods_total", map[string]string{"outcome": "scheduled"}),
				s("sample_scheduler_pods_total", map[string]string{"outcome": "unschedulable"}),
				s("sample_scheduler_pods_total", map[string]string{"outcome": "failed"}),
				s("sample_scheduler_calls_total", map[string]string{"peer": LegacyExtender, "version": "1.0.0", "code": "ok"}))
		default:
			line = fmt.Sprintf("%d requests at 1.0.0 (%d plain, without a handshake), %d at 2.0.0, %d errors",
				s("sample_extender_requests_total", map[string]string{"version": "1.0.0"}),
				s("sample_extender_requests_total", map[string]string{"protocol": "plain"}),
				s("sample_extender_requests_total", map[string]string{"version": "2.0.0"}),
				s("sample_extender_requests_total", map[string]string{"outcome": "error"}))
		}
		out = append(out, fmt.Sprintf("%s %s (%s→%s): %s", inc.Component, inc.Version, dur(inc.From), dur(inc.To), line))
	}
	return out
}

// podsRunWherePlaced checks, from the final node controller's bound pods,
// that every pod bound more than bound ago was reported Running (the node
// controller takes a pod's status only from the kubelet of its node)
// within bound, not counting the time outage says its kubelet could hear
// of no pod (see loopOutages), and that it holds some: the process mode's
// view of the to-node loop. Pods that ended are gone from it, so it checks
// those still bound.
func podsRunWherePlaced(pods []nodecontroller.Pod, now time.Time, bound time.Duration, outage func(from, to time.Time) time.Duration) string {
	if len(pods) == 0 {
		return "the node controller holds no bound pod"
	}
	late := 0
	var first string
	for _, p := range pods {
		if len(p.Phases) == 0 {
			continue
		}
		placed, end := p.Phases[0].At, now
		for _, ph := range p.Phases {
			if ph.Phase == nsv2.PodStatusPhaseRunning {
				end = ph.At
				break
			}
		}
		if waited := end.Sub(placed) - outage(placed, end); waited > bound {
			late++
			if first == "" {
				first = fmt.Sprintf("%s, bound %s ago, waited %s besides outages, phases %v", p, dur(now.Sub(placed)), dur(waited), p.Phases)
			}
		}
	}
	if late > 0 {
		return fmt.Sprintf("%d of %d bound pods were not reported Running within %s of their binding, besides outages: %s", late, len(pods), bound, first)
	}
	return ""
}
