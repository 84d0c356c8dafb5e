package demo

import (
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// minBlocked is the shortest blocked window the summary lists on its own:
// shorter ones are the moments a client takes to handshake a new or
// restarted peer, counted together.
const minBlocked = 100 * time.Millisecond

// summary is what the report says about a run.
type summary struct {
	mode       string
	timeline   *upgradesim.Timeline
	versions   []versionRow
	blocked    []blockedWindow
	gaps       int
	calls      []upgradesim.CallSeries
	invariants []invariantResult
	violations []upgradesim.Violation
	// outcomes are lines on what the components themselves did.
	outcomes []string
}

// versionRow is who ran which version when.
type versionRow struct {
	replica string
	spans   []span
}

type span struct {
	value    string
	from, to time.Duration
}

// blockedWindow is a span during which a client held no session with the
// component it calls.
type blockedWindow struct {
	pair     string
	from, to time.Duration
	// versions says what each side ran when the window began.
	versions string
}

type invariantResult struct {
	name, says string
	broken     bool
}

// invariantSaid names an invariant and says what it means.
type invariantSaid struct{ name, says string }

// inProcessInvariants are the invariants the in-process run checks.
var inProcessInvariants = []invariantSaid{
	{upgradesim.InvariantVersions, "no call or watch was served at a version its client or its server does not speak"},
	{upgradesim.InvariantNoLostCalls, "every acknowledged call was applied"},
	{upgradesim.InvariantAppliedOnce, "no call was applied twice"},
	{upgradesim.InvariantBlockedBounded, "no client waited while a compatible server was up (bound 10s)"},
	{upgradesim.InvariantExternalUninterrupted, "no call to the never-upgraded legacy extender failed"},
	{upgradesim.InvariantObserved, "every server's handlers were seen processing their calls"},
	{upgradesim.InvariantSteps, "every step of the plan was carried out"},
	{upgradesim.InvariantWatchersConverge, "the scheduler's NodeHealth cache ended equal to the node controller's topic"},
	{"nodes-stay-known", "no node became Unknown before its kubelet went unheard by every node controller replica for the grace period"},
	{"every-node-reported", "the final node controller knows every node"},
	{"evictions-made-room", "every eviction made room for a pod of higher priority that was then bound on that node (within " + runBound.String() + ")"},
	{"pods-preempted", "the nodes filled and pods of higher priority were placed by preempting pods of lower priority"},
	{"pods-run-where-placed", "every pod the scheduler placed was reported Running (or ended) by the kubelet of the node it chose within " + runBound.String() + ", besides the time the kubelet had a node without a compatible node controller"},
	{"pods-scheduled-after-upgrade", "the upgraded scheduler placed pods"},
}

// summarize reads a run's report.
func summarize(rep *upgradesim.Report, mode string, said []invariantSaid) *summary {
	s := &summary{mode: mode, timeline: rep.Timeline, calls: rep.Timeline.Calls, violations: rep.Violations}
	broken := map[string]bool{}
	for _, v := range rep.Violations {
		broken[v.Invariant] = true
	}
	for _, inv := range said {
		s.invariants = append(s.invariants, invariantResult{name: inv.name, says: inv.says, broken: broken[inv.name]})
		delete(broken, inv.name)
	}
	for name := range broken {
		s.invariants = append(s.invariants, invariantResult{name: name, says: "(see the violations)", broken: true})
	}
	tl := rep.Timeline
	for _, row := range tl.Rows {
		if row.Kind == upgradesim.RowReplica {
			vr := versionRow{replica: row.Label}
			for _, seg := range row.Segments {
				if seg.State != "up" {
					continue
				}
				if n := len(vr.spans); n > 0 && vr.spans[n-1].value == seg.Value && seg.From-vr.spans[n-1].to < minBlocked {
					vr.spans[n-1].to = seg.To
					continue
				}
				vr.spans = append(vr.spans, span{seg.Value, seg.From, seg.To})
			}
			s.versions = append(s.versions, vr)
			continue
		}
		var open *blockedWindow
		flush := func() {
			if open == nil {
				return
			}
			if open.to-open.from >= minBlocked {
				s.blocked = append(s.blocked, *open)
			} else {
				s.gaps++
			}
			open = nil
		}
		for _, seg := range row.Segments {
			if seg.State != "blocked" {
				flush()
				continue
			}
			if open == nil {
				open = &blockedWindow{pair: row.Label, from: seg.From}
			}
			open.to = seg.To
			open.versions = pairVersions(tl, row.Label, open.from+(open.to-open.from)/2)
		}
		flush()
	}
	sort.SliceStable(s.blocked, func(i, j int) bool { return s.blocked[i].from < s.blocked[j].from })
	return s
}

// pairVersions says which versions the two sides of a pair ran at t.
func pairVersions(tl *upgradesim.Timeline, pair string, t time.Duration) string {
	client, server, _ := strings.Cut(pair, "→")
	return fmt.Sprintf("%s %s, %s %s", client, versionAt(tl, client, t), server, versionAt(tl, server, t))
}

func versionAt(tl *upgradesim.Timeline, replica string, t time.Duration) string {
	for _, row := range tl.Rows {
		if row.Kind != upgradesim.RowReplica || row.Label != replica {
			continue
		}
		state := "down"
		for _, seg := range row.Segments {
			if seg.From <= t && (t < seg.To || seg.To == seg.From) {
				state = seg.Value
				if seg.State != "up" {
					state = seg.State
				}
			}
		}
		return state
	}
	return "?"
}

func dur(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// writeReport prints the summary for people.
func writeReport(w io.Writer, s *summary) {
	fmt.Fprint(w, s.timeline.Text())
	fmt.Fprintln(w)
	fmt.Fprintln(w, "who ran which version")
	for _, vr := range s.versions {
		var parts []string
		for _, sp := range vr.spans {
			parts = append(parts, fmt.Sprintf("%s %s→%s", sp.value, dur(sp.from), dur(sp.to)))
		}
		fmt.Fprintf(w, "  %-24s %s\n", vr.replica, strings.Join(parts, "   "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "blocked pairs: the client had no compatible server, so its calls waited instead of failing")
	if len(s.blocked) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, b := range s.blocked {
		fmt.Fprintf(w, "  %-34s blocked %-8s %s→%s  (%s)\n", b.pair, dur(b.to-b.from), dur(b.from), dur(b.to), b.versions)
	}
	if s.gaps > 0 {
		fmt.Fprintf(w, "  and %d gap(s) under %s while clients handshook new or restarted peers\n", s.gaps, minBlocked)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "calls per pair %21s %7s %10s\n", "served", "failed", "abandoned")
	for _, c := range s.calls {
		fmt.Fprintf(w, "  %-34s %6d %7d %10d\n", c.Label, len(c.OK), len(c.Failed), len(c.Abandoned))
	}
	fmt.Fprintln(w, "  (abandoned: still waiting when their caller was stopped for its upgrade)")
	fmt.Fprintln(w)
	if len(s.outcomes) > 0 {
		fmt.Fprintln(w, "what the components did")
		for _, o := range s.outcomes {
			fmt.Fprintln(w, "  "+o)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "invariants")
	for _, inv := range s.invariants {
		mark := "ok    "
		if inv.broken {
			mark = "BROKEN"
		}
		fmt.Fprintf(w, "  %s %-30s %s\n", mark, inv.name, inv.says)
	}
	for _, v := range s.violations {
		fmt.Fprintf(w, "  ! %v\n", v)
	}
	if len(s.violations) == 0 {
		fmt.Fprintf(w, "\nverdict: ok (%s, %s)\n", s.mode, dur(s.timeline.Duration))
	} else {
		fmt.Fprintf(w, "\nverdict: FAILED, %d violation(s) (%s, %s)\n", len(s.violations), s.mode, dur(s.timeline.Duration))
	}
}

// writeFiles writes the timeline as SVG, as an HTML page with the report,
// and as text.
func writeFiles(dir string, tl *upgradesim.Timeline, s *summary) ([]string, error) {
	var report strings.Builder
	writeReport(&report, s)
	svg := tl.SVG()
	page := "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>lockstep demo: rolling upgrade v1 → v2</title>\n" +
		"<style>body{font-family:sans-serif;margin:2em}pre{font-size:12px;line-height:1.25}</style></head><body>\n" +
		"<h1>lockstep demo: rolling upgrade v1 → v2</h1>\n" + svg + "\n<pre>" + html.EscapeString(report.String()) + "</pre>\n</body></html>\n"
	files := []struct{ name, content string }{
		{"timeline.svg", svg},
		{"timeline.html", page},
		{"timeline.txt", report.String()},
	}
	var written []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}
