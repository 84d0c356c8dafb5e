package results

import (
	"fmt"
	"math"
	"strings"

	"github.com/lockstep-dev/lockstep/bench/internal/report"
	"github.com/lockstep-dev/lockstep/bench/internal/stats"
)

// Workload, variant and metric names of the selected watch (topics with
// selectors, docs/topics.md): watchers that each select their own node
// of a pod assignment topic, beside the anchor of a topic with one
// watcher.
const (
	WSelect       = "selected watch"
	VSelectAnchor = "anchor: 1 watcher of the whole topic"

	MSelCPU       = "CPU µs/change"
	MSelGrossCPU  = "gross CPU µs/change"
	MSelP50       = "p50 ms"
	MSelP99       = "p99 ms"
	MSelSnapMin   = "snapshot min"
	MSelSnapMax   = "snapshot max"
	MSelPerChange = "deliveries/change"
	MSelOutside   = "objects outside the selection"
	MSelSetup     = "setup s"
)

// SelectVariant names a selected-watch row: watchers, each selecting its
// node (or, unselected, each watching the whole topic), over a topic of
// objects pods.
func SelectVariant(watchers, objects int, unselected bool) string {
	if unselected {
		return fmt.Sprintf("%d watchers of the whole topic, %d pods (no selection)", watchers, objects)
	}
	return fmt.Sprintf("%d watchers, %d pods", watchers, objects)
}

// selectors writes the selected-watch section: one row per size, with
// CPU per change as a ratio to the anchor's.
func (w *writeup) selectors() {
	variants := w.r.Variants(WSelect)
	if len(variants) == 0 {
		return
	}
	sec := report.Section{Title: "Selected watch (topic selectors)", Intro: `
A pod assignment topic written by the server at 100 changes/s (` + fmt.Sprint(LengthsOf(w.run.Quick).SelectChanges) + `
changes per run), every tenth
change rebinding its pod to the next node (a delete for the old node's
watcher, an add for the new one's); each watcher is an informer that
selects its own node (` + "`framework.Select(\"node\", name)`" + `), 100 to a client. The
anchor is a topic with one watcher that selects nothing, measured once in
each round beside the rows; the last row, every watcher watching the whole
topic, is what the same change costs without selectors. "CPU µs/change" is the whole process's (server,
clients and writer) CPU during the changes, less its CPU over an idle
window of the same length just before them (pings and heartbeats of the
idle watchers), per change; "gross" keeps the idle share. Latency is from
the writer's Set to the watcher's handler.`,
		Tables: []report.Table{{Header: []string{"variant", "CPU µs/change", "vs anchor", "gross CPU µs/change",
			"p50 ms", "p99 ms", "deliveries/change", "snapshot per watcher", "outside selection", "setup s"}}}}
	base := w.r.Median(WSelect, VSelectAnchor, MSelCPU)
	worstRatio, worstP99 := 0.0, 0.0
	for _, v := range variants {
		cpu := w.r.Median(WSelect, v, MSelCPU)
		ratio := stats.Ratio(cpu, base)
		if v != VSelectAnchor && !strings.Contains(v, "no selection") && !math.IsNaN(ratio) {
			worstRatio = max(worstRatio, ratio)
			worstP99 = max(worstP99, w.r.Median(WSelect, v, MSelP99))
		}
		snap := fmt.Sprintf("%.0f–%.0f", w.r.Median(WSelect, v, MSelSnapMin), w.r.Median(WSelect, v, MSelSnapMax))
		sec.Tables[0].Rows = append(sec.Tables[0].Rows, []string{v, w.fig(WSelect, v, MSelCPU, "%.1f"), ratioText(ratio),
			w.fig(WSelect, v, MSelGrossCPU, "%.1f"), w.fig(WSelect, v, MSelP50, "%.2f"), w.fig(WSelect, v, MSelP99, "%.2f"),
			w.fig(WSelect, v, MSelPerChange, "%.2f"), snap, w.fig(WSelect, v, MSelOutside, "%.0f"), w.fig(WSelect, v, MSelSetup, "%.1f")})
	}
	sec.Notes = fmt.Sprintf("Targets: CPU per change within 2× of the anchor (worst row here %s), p99 ≤ 50 ms (worst %.2f ms), "+
		"each watcher's snapshot only its node's pods (the snapshot column; 30 at 150,000 pods over 5,000 nodes).",
		ratioText(worstRatio), worstP99)
	w.out.Doc.Sections = append(w.out.Doc.Sections, sec)
}
