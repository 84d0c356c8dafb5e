package report

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

func TestWriteRendersFactsTargetsAndSections(t *testing.T) {
	var out strings.Builder
	err := Write(&out, Doc{
		Title: "Benchmarks", Preamble: "Generated.",
		Facts: [][2]string{{"commit", "abc123"}},
		Targets: []Target{
			{ID: "P1", Workload: "unary", Want: "≥ 1.0×", Measured: "0.8×", Verdict: Missed},
			{ID: "P3", Workload: "beats", Want: "≥ 10×", Measured: "160×", Verdict: Met},
			{ID: "P4s", Workload: "shared", Want: "≤ 10 ms"},
		},
		Sections: []Section{{
			Title: "Unary", Intro: "64 callers.",
			Tables: []Table{{Header: []string{"variant", "calls/s"}, Rows: [][]string{{"a|b", "1\n2"}, {"short"}}}},
			Plots:  [][2]string{{"bench/unary.svg", "calls/s per variant"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"# Benchmarks\n\nGenerated.\n",
		"| commit | abc123 |",
		"| P1 | unary | ≥ 1.0× | 0.8× | **missed** |",
		"| P3 | beats | ≥ 10× | 160× | **met** |",
		"| P4s | shared | ≤ 10 ms |  | not measured |",
		"## Unary\n\n64 callers.\n\n| variant | calls/s |\n|---|---|\n",
		`| a\|b | 1 2 |`, // a pipe or line break would end the cell
		"| short |  |",   // a short row is padded to the header
		"![calls/s per variant](bench/unary.svg)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.HasSuffix(got, "\n\n") {
		t.Error("the report ends with a blank line")
	}
}

// wellFormed fails unless svg parses as XML with an <svg> root.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var root string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
}

func TestLinePlotDrawsEverySeriesWithItsLegend(t *testing.T) {
	svg := LinePlot("p99 <vs> watchers", "watchers", "ms", true, []Series{
		{Name: "lockstep & co", Points: []XY{{100, 5}, {1000, 40}}},
		{Name: "etcd", Points: []XY{{100, 8}, {1000, 190}, {0, 3}}}, // x=0 cannot sit on a log axis
	})
	wellFormed(t, svg)
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
	for _, want := range []string{"lockstep &amp; co", "etcd", "p99 &lt;vs&gt; watchers"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Errorf("the plot has a coordinate that is not a number:\n%s", svg)
	}
}

func TestPlotsOfNothingSaySo(t *testing.T) {
	for _, svg := range []string{LinePlot("empty", "x", "y", false, nil), BarPlot("none", "calls/s", nil)} {
		wellFormed(t, svg)
		if !strings.Contains(svg, "nothing measured") {
			t.Errorf("an empty plot does not say so:\n%s", svg)
		}
	}
}

func TestBarPlotScalesBarsToTheLargest(t *testing.T) {
	svg := BarPlot("calls/s", "calls/s", []Bar{{"big", 200}, {"half", 100}, {"missing", math.NaN()}})
	wellFormed(t, svg)
	if !strings.Contains(svg, `width="380.0"`) || !strings.Contains(svg, `width="190.0"`) {
		t.Errorf("bars are not scaled to the largest:\n%s", svg)
	}
	if strings.Contains(svg, `width="NaN"`) {
		t.Error("a missing figure drew a bar of no number")
	}
}

func TestNiceCeilAndNum(t *testing.T) {
	for v, want := range map[float64]float64{0.7: 1, 3: 5, 42: 50, 180: 200, 1000: 1000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
	for v, want := range map[float64]string{36600: "36.6k", 250000: "250k", 9.2: "9.20", 0.5: "0.5", 150: "150"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}
