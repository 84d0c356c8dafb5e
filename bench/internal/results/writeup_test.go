package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/bench/internal/hostload"
	"github.com/lockstep-dev/lockstep/bench/internal/report"
)

func TestResultsMedianSkipsUnmeasuredRounds(t *testing.T) {
	r := NewResults()
	for _, v := range []float64{3, math.NaN(), 1, 2} {
		r.Add("w", "v", Round{Metrics: map[string]float64{"m": v}})
	}
	r.Add("w", "v", Round{Metrics: map[string]float64{"other": 9}, Flagged: true})
	if got := r.Median("w", "v", "m"); got != 2 {
		t.Fatalf("Median = %v, want 2 (NaN and absent rounds left out)", got)
	}
	if got := r.Median("w", "nobody", "m"); !math.IsNaN(got) {
		t.Fatalf("Median of an unknown variant = %v, want NaN", got)
	}
	if got := r.Flagged("w", "v"); got != 1 {
		t.Fatalf("Flagged = %d, want 1", got)
	}
}

// unaryRound records one unary round of variant with a rate and p99.
func unaryRound(r *Results, callers int, variant string, rate, p50, p99 float64) {
	r.Add(UnaryWorkload(callers), variant, Round{
		Metrics:   map[string]float64{MCallsPerSec: rate, MP50: p50, MP99: p99, MCPUPerCall: 50},
		Latencies: []time.Duration{time.Duration(p50) * time.Microsecond, time.Duration(p99) * time.Microsecond},
		Before:    hostload.Load{Idle: 0.95},
	})
}

func TestWriteJudgesUnaryTargetsFromTheRunsMedians(t *testing.T) {
	r := NewResults()
	unaryRound(r, 64, VLockstep, 50000, 1500, 4800)
	unaryRound(r, 64, VLockstepUnbatched, 20000, 2000, 9000)
	unaryRound(r, 64, VGRPCProto, 25000, 2500, 6000)
	unaryRound(r, 64, VConnectJSON, 5000, 9000, 20000)
	unaryRound(r, 1, VLockstep, 100, 40, 90)
	unaryRound(r, 1, VGRPCProto, 100, 60, 120)
	w := Write(Run{Rounds: 1}, r, [][2]string{{"commit", "abc"}}, "bench")
	verdicts := map[string]report.Verdict{}
	for _, tg := range w.Doc.Targets {
		verdicts[tg.ID] = tg.Verdict
	}
	want := map[string]report.Verdict{
		"P1":  report.Met,         // 2.0× with p99 0.8× (not the unbatched row's 0.8×)
		"P1c": report.Met,         // 10× connect-go JSON
		"P2":  report.Met,         // p50 40 µs against 60
		"P4":  report.NotMeasured, // no fan-out ran
	}
	for id, v := range want {
		if verdicts[id] != v {
			t.Errorf("%s: verdict %v, want %v", id, verdicts[id], v)
		}
	}
	if len(w.Doc.Targets) != len(targetWant) {
		t.Errorf("%d targets in the report, want every one of the %d", len(w.Doc.Targets), len(targetWant))
	}
	var md strings.Builder
	if err := report.Write(&md, w.Doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "0.80×") {
		t.Errorf("the report does not give P1's ratio 0.80×:\n%s", md.String())
	}
	for _, name := range []string{"unary-cdf-1.svg", "unary-cdf-64.svg", "unary-calls.svg"} {
		if w.Plots[name] == "" {
			t.Errorf("no plot %s", name)
		}
	}
}

// P1 is met only with both of its bounds: at least 2.0× gRPC's calls/s
// and at most 0.8× its p99, each between the run's medians.
func TestWriteJudgesP1ByCallsAndTail(t *testing.T) {
	for _, c := range []struct {
		name      string
		rate, p99 float64 // lockstep's, against gRPC's 25000 calls/s and p99 6000 µs
		want      report.Verdict
	}{
		{"both bounds met", 50000, 4800, report.Met},
		{"calls/s short of 2.0×", 49000, 3000, report.Missed},
		{"p99 over 0.8×", 60000, 4900, report.Missed},
		{"at gRPC's p99 (the old bound)", 60000, 6000, report.Missed},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewResults()
			unaryRound(r, 64, VLockstep, c.rate, 1000, c.p99)
			unaryRound(r, 64, VGRPCProto, 25000, 2500, 6000)
			w := Write(Run{Rounds: 1}, r, nil, "bench")
			for _, tg := range w.Doc.Targets {
				if tg.ID != "P1" {
					continue
				}
				if tg.Verdict != c.want {
					t.Errorf("P1 = %+v, want %v", tg, c.want)
				}
				if !strings.Contains(tg.Want, "≥ 2.0×") || !strings.Contains(tg.Want, "0.8×") {
					t.Errorf("P1's target reads %q, not the raised bounds", tg.Want)
				}
				return
			}
			t.Fatal("no P1 target in the report")
		})
	}
}

func TestWriteGivesEachWorkloadsWallTimeAndTheirSum(t *testing.T) {
	r := NewResults()
	unaryRound(r, 64, VLockstep, 35000, 1500, 5000)
	r.Walls = []Wall{{"unary", 3*time.Minute + 2*time.Second}, {"selectors", 4*time.Minute + 100*time.Millisecond}}
	w := Write(Run{Rounds: 3}, r, nil, "bench")
	got := ""
	for _, f := range w.Doc.Facts {
		if f[0] == "wall time per workload" {
			got = f[1]
		}
	}
	if want := "unary 3m2s, selectors 4m0s (sum 7m2s)"; got != want {
		t.Fatalf("wall time fact = %q, want %q", got, want)
	}
}

func TestWriteGivesMutualTLSRowsTheirOwnTableAgainstGRPCWithMutualTLS(t *testing.T) {
	r := NewResults()
	unaryRound(r, 64, VLockstep, 60000, 1000, 4000)
	unaryRound(r, 64, VGRPCProto, 25000, 2500, 6000)
	unaryRound(r, 64, VLockstepMTLS, 30000, 1500, 5000)
	unaryRound(r, 64, VGRPCProtoMTLS, 20000, 3000, 4500) // 1.5× and a higher p99: P1 mTLS missed
	unaryRound(r, 1, VLockstep, 100, 40, 90)
	unaryRound(r, 1, VGRPCProto, 100, 60, 120)
	unaryRound(r, 1, VLockstepMTLS, 100, 50, 90)
	unaryRound(r, 1, VGRPCProtoMTLS, 100, 70, 120)
	w := Write(Run{Rounds: 1}, r, nil, "bench")
	verdicts := map[string]report.Target{}
	for _, tg := range w.Doc.Targets {
		verdicts[tg.ID] = tg
	}
	if v := verdicts["P1 mTLS"]; v.Verdict != report.Missed || !strings.Contains(v.Measured, "30000 vs 20000 calls/s = **1.50×**") {
		t.Errorf("P1 mTLS = %+v, want missed at 1.50× (p99 1.11× gRPC's)", v)
	}
	if v := verdicts["P2 mTLS"]; v.Verdict != report.Met || !strings.Contains(v.Measured, "50 vs 70") {
		t.Errorf("P2 mTLS = %+v, want met, p50 50 vs 70 µs", v)
	}
	if v := verdicts["P1"]; v.Verdict != report.Met || !strings.Contains(v.Measured, "60000 vs 25000") {
		t.Errorf("P1 = %+v, want met against plaintext gRPC", v)
	}
	var plain, mtls *report.Table
	for i, tb := range w.Doc.Sections[0].Tables {
		switch tb.Header[0] {
		case "64 caller(s)":
			plain = &w.Doc.Sections[0].Tables[i]
		case "64 caller(s), mutual TLS":
			mtls = &w.Doc.Sections[0].Tables[i]
		}
	}
	if plain == nil || mtls == nil {
		t.Fatalf("want a plaintext and a mutual-TLS table at 64 callers, have %+v", w.Doc.Sections[0].Tables)
	}
	if len(plain.Rows) != 2 || len(mtls.Rows) != 2 {
		t.Fatalf("rows: %d plaintext, %d mutual TLS; want 2 and 2", len(plain.Rows), len(mtls.Rows))
	}
	// lockstep with mutual TLS: 1.50× gRPC's calls/s with it, CPU 1.00×
	// its plaintext row's (both 50 µs).
	if got := strings.Join(mtls.Rows[0], "|"); got != "lockstep, mutual TLS|30000|1500|5000|50.0|1.50×|1.11×|1.00×|0" {
		t.Errorf("lockstep's mutual-TLS row = %s", got)
	}
}

func TestWriteJudgesHeartbeatsWithMutualTLSAgainstEtcd(t *testing.T) {
	r := NewResults()
	beat := func(v string, total, cores float64) {
		r.Add(WHeartbeat, v, Round{Metrics: map[string]float64{MTotalCPUPer: total, MServerCPUPer: total / 2,
			MServerCores: cores, MBeatsPerSec: 10000, MSessions: MaxSessions}})
	}
	beat(VBeatLockstep, 3, 0.02)
	beat(VBeatLockstepMTLS, 15, 0.3) // 8× less than etcd, over 0.25 core: missed
	r.Add(WHeartbeat, VBeatEtcd, Round{Metrics: map[string]float64{MTotalCPUPer: 120}})
	w := Write(Run{Rounds: 1}, r, nil, "bench")
	got := map[string]report.Target{}
	for _, tg := range w.Doc.Targets {
		got[tg.ID] = tg
	}
	if got["P3"].Verdict != report.Met {
		t.Errorf("P3 = %+v, want met (40× less)", got["P3"])
	}
	if tg := got["P3 mTLS"]; tg.Verdict != report.Missed || !strings.Contains(tg.Measured, "15.00 µs per beat") || !strings.Contains(tg.Measured, "**8× less**") {
		t.Errorf("P3 mTLS = %+v, want missed at 8× less", tg)
	}
}

// gapRound records one reconnect round of variant: n trials, the first
// n-3 at p50 ms, the last 3 at p99 ms.
func gapRound(r *Results, variant string, n int, p50, p99 float64) {
	var lat []time.Duration
	for i := range n {
		ms := p50
		if i >= n-3 {
			ms = p99
		}
		lat = append(lat, time.Duration(ms*float64(time.Millisecond)))
	}
	r.Add(WReconnect, variant, Round{Latencies: lat, Before: hostload.Load{Idle: 0.95},
		Metrics: map[string]float64{MP50ms: p50, MP99ms: p99, MMaxms: p99, MSamples: float64(n)}})
}

// The reconnect gap's mutual-TLS rows have their own table, against gRPC
// with mutual TLS, and their own target row, judged like P6 on the
// pooled samples: a polling client's p99 within 1.1 dial intervals (110 ms).
func TestWriteJudgesTheReconnectGapWithMutualTLSOnItsOwnRow(t *testing.T) {
	r := NewResults()
	gapRound(r, VReconnectLS, 120, 20, 40)
	gapRound(r, VReconnectGR, 120, 700, 2500)
	gapRound(r, VReconnectLSMTLS, 120, 30, 130) // p99 over 110 ms: P6 mTLS missed
	gapRound(r, VReconnectGRMTLS, 120, 750, 3000)
	w := Write(Run{Rounds: 1}, r, nil, "bench")
	got := map[string]report.Target{}
	for _, tg := range w.Doc.Targets {
		got[tg.ID] = tg
	}
	if v := got["P6"]; v.Verdict != report.Met || !strings.Contains(v.Measured, "p99 **40.0 ms** over 120 trials (gRPC: 2500 ms)") {
		t.Errorf("P6 = %+v, want met at 40 ms", v)
	}
	if v := got["P6 mTLS"]; v.Verdict != report.Missed ||
		!strings.Contains(v.Measured, "p99 **130.0 ms** over 120 trials (gRPC with mutual TLS: 3000 ms)") {
		t.Errorf("P6 mTLS = %+v, want missed at 130 ms against gRPC's 3000", v)
	}
	var sec *report.Section
	for i := range w.Doc.Sections {
		if w.Doc.Sections[i].Title == "Reconnect gap (P6)" {
			sec = &w.Doc.Sections[i]
		}
	}
	if sec == nil || len(sec.Tables) != 2 {
		t.Fatalf("want the reconnect section with a plaintext and a mutual-TLS table, have %+v", sec)
	}
	if got := strings.Join(sec.Tables[1].Rows[0], "|"); got != VReconnectLSMTLS+"|30.0|130.0|130.0|120|0.04×" {
		t.Errorf("lockstep's mutual-TLS row = %s", got)
	}
	if len(sec.Tables[0].Rows) != 2 || len(sec.Tables[1].Rows) != 2 {
		t.Errorf("rows: %d plaintext, %d mutual TLS; want 2 and 2", len(sec.Tables[0].Rows), len(sec.Tables[1].Rows))
	}
}

// Where the reconnect rounds count the dials made while the address was
// dark, the tables have a column of them and the P6 row says lockstep's.
func TestWriteReportsTheDialsWhileDarkBesideP6(t *testing.T) {
	r := NewResults()
	gapRound(r, VReconnectLS, 120, 20, 90)
	gapRound(r, VReconnectGR, 120, 700, 2500)
	r.rounds[WReconnect][VReconnectLS][0].Metrics[MDialsPerS] = 10.2
	r.rounds[WReconnect][VReconnectGR][0].Metrics[MDialsPerS] = 0.7
	w := Write(Run{Rounds: 1}, r, nil, "bench")
	var p6 report.Target
	for _, tg := range w.Doc.Targets {
		if tg.ID == "P6" {
			p6 = tg
		}
	}
	if !strings.Contains(p6.Measured, "p99 **90.0 ms** over 120 trials at 10.2 dials/s while dark (gRPC: 2500 ms)") {
		t.Errorf("P6 = %+v, want the dials beside the p99", p6)
	}
	for _, sec := range w.Doc.Sections {
		if sec.Title != "Reconnect gap (P6)" {
			continue
		}
		tb := sec.Tables[0]
		if tb.Header[len(tb.Header)-1] != MDialsPerS {
			t.Fatalf("header %v has no %q column", tb.Header, MDialsPerS)
		}
		if got := strings.Join(tb.Rows[0], "|"); got != VReconnectLS+"|20.0|90.0|90.0|120|0.04×|10.2" {
			t.Errorf("lockstep's row = %s", got)
		}
		return
	}
	t.Fatal("no reconnect section")
}

// The readiness row has a target line of its own, judged on its pooled
// p99 and on dialling no more while dark than the polling row; P6 stays
// judged on the polling row.
func TestWriteJudgesTheReadinessRowBesideP6(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dials float64 // the readiness row's dials/s dark; the polling row's is 10
		want  report.Verdict
	}{
		{name: "as many dials", dials: 10.5, want: report.Met},
		{name: "more dials", dials: 20, want: report.Missed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewResults()
			gapRound(r, VReconnectLS, 120, 50, 130) // over 1.1 dial intervals
			gapRound(r, VReconnectLSReady, 120, 2, 5)
			gapRound(r, VReconnectGR, 120, 700, 2500)
			r.rounds[WReconnect][VReconnectLS][0].Metrics[MDialsPerS] = 10
			r.rounds[WReconnect][VReconnectLSReady][0].Metrics[MDialsPerS] = tc.dials
			w := Write(Run{Rounds: 1}, r, nil, "bench")
			got := map[string]report.Target{}
			var ids []string
			for _, tg := range w.Doc.Targets {
				got[tg.ID] = tg
				ids = append(ids, tg.ID)
			}
			if v := got["P6"]; v.Verdict != report.Missed || !strings.Contains(v.Measured, "p99 **130.0 ms**") {
				t.Errorf("P6 = %+v, want missed on the polling row's 130 ms", v)
			}
			ready := got["P6 ready"]
			if ready.Verdict != tc.want || !strings.Contains(ready.Measured,
				fmt.Sprintf("p99 **5.0 ms** over 120 trials at %.1f dials/s while dark (polling: 130.0 ms at 10.0 dials/s while dark)", tc.dials)) {
				t.Errorf("P6 ready = %+v, want %v at 5 ms", ready, tc.want)
			}
			if i := slices.Index(ids, "P6 ready"); i < 1 || ids[i-1] != "P6" {
				t.Errorf("targets in order %v, want P6 ready right after P6", ids)
			}
		})
	}
}

// P9 and P10 are make scale's: the report says so in a section of its own
// that links scale.md and its plot from wherever the report is written.
func TestWritePointsToTheScaleResults(t *testing.T) {
	for _, c := range []struct{ docs, md, svg string }{
		{"", "](scale.md)", "](scale/scale.svg)"},
		{"../docs", "](../docs/scale.md)", "](../docs/scale/scale.svg)"},
	} {
		w := Write(Run{Rounds: 3, Docs: c.docs}, NewResults(), nil, "bench")
		var b strings.Builder
		if err := report.Write(&b, w.Doc); err != nil {
			t.Fatal(err)
		}
		doc := b.String()
		i := strings.Index(doc, "## Cluster scale (P9, P10)")
		if i < 0 {
			t.Fatalf("docs %q: no scale section:\n%s", c.docs, doc)
		}
		for _, want := range []string{c.md, c.svg} {
			if !strings.Contains(doc[i:], want) {
				t.Errorf("docs %q: the scale section lacks %q:\n%s", c.docs, want, doc[i:])
			}
		}
	}
}

// A polling client meets P6 at a p99 within 1.1 dial intervals (110 ms)
// only while it dials at most 11 times a second while dark; the readiness
// row keeps its 50 ms.
func TestWriteJudgesPollingP6ByTheDialInterval(t *testing.T) {
	for _, c := range []struct {
		p99, dials float64
		want       report.Verdict
	}{
		{p99: 100, dials: 10.9, want: report.Met},
		{p99: 120, dials: 10.9, want: report.Missed},
		{p99: 100, dials: 12, want: report.Missed},
	} {
		r := NewResults()
		gapRound(r, VReconnectLS, 120, 50, c.p99)
		gapRound(r, VReconnectGR, 120, 700, 2500)
		gapRound(r, VReconnectLSReady, 120, 5, 60) // over 50 ms: missed however it polls
		r.rounds[WReconnect][VReconnectLS][0].Metrics[MDialsPerS] = c.dials
		w := Write(Run{Rounds: 1}, r, nil, "bench")
		got := map[string]report.Target{}
		for _, tg := range w.Doc.Targets {
			got[tg.ID] = tg
		}
		if v := got["P6"].Verdict; v != c.want {
			t.Errorf("p99 %.0f ms at %.1f dials/s: P6 %v, want %v", c.p99, c.dials, v, c.want)
		}
		if v := got["P6 ready"].Verdict; v != report.Missed {
			t.Errorf("P6 ready at 60 ms: %v, want missed", v)
		}
	}
}
