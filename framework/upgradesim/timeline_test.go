package upgradesim_test

import (
	"encoding/xml"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

const ms = time.Millisecond

// sampleTimeline is a lockstep rolling upgrade as a run records it: the
// kubelet goes first and blocks until the nodecontroller follows; a kill
// and a partition happen along the way.
func sampleTimeline() *upgradesim.Timeline {
	seg := func(from, to time.Duration, state, value string) upgradesim.Segment {
		return upgradesim.Segment{From: from, To: to, State: state, Value: value}
	}
	return &upgradesim.Timeline{
		Plan: "sample", Seed: 42, Duration: 1000 * ms,
		Steps: []upgradesim.StepSpan{
			{Number: 1, Text: "start nodecontroller at v1", From: 0, To: 2 * ms},
			{Number: 2, Text: "start kubelet at v1", From: 2 * ms, To: 3 * ms},
			{Number: 3, Text: "upgrade kubelet to v2", From: 300 * ms, To: 320 * ms},
			{Number: 4, Text: "partition kubelet and nodecontroller", From: 500 * ms, To: 500 * ms},
			{Number: 5, Text: "upgrade nodecontroller to v2 without drain", From: 600 * ms, To: 640 * ms},
			{Number: 6, Text: "heal kubelet and nodecontroller", From: 700 * ms, To: 700 * ms},
		},
		Rows: []upgradesim.Row{
			{Label: "nodecontroller", Kind: upgradesim.RowReplica, Versions: []string{"v1", "v2"}, Segments: []upgradesim.Segment{
				seg(0, 2*ms, "down", ""), seg(2*ms, 600*ms, "up", "v1"), seg(600*ms, 640*ms, "down", ""), seg(640*ms, 1000*ms, "up", "v2")}},
			{Label: "kubelet", Kind: upgradesim.RowReplica, Versions: []string{"v1", "v2"}, Segments: []upgradesim.Segment{
				seg(0, 3*ms, "down", ""), seg(3*ms, 300*ms, "up", "v1"), seg(300*ms, 310*ms, "draining", "v1"),
				seg(310*ms, 320*ms, "down", ""), seg(320*ms, 1000*ms, "up", "v2")}},
			{Label: "kubelet→nodecontroller", Kind: upgradesim.RowPair, Segments: []upgradesim.Segment{
				seg(0, 20*ms, "down", ""), seg(20*ms, 300*ms, "agreed", "nodeinfo 1.0.0"), seg(300*ms, 500*ms, "blocked", ""),
				seg(500*ms, 700*ms, "partitioned", ""), seg(700*ms, 720*ms, "blocked", ""), seg(720*ms, 1000*ms, "agreed", "nodeinfo 2.0.0")}},
		},
		Calls: []upgradesim.CallSeries{{
			Label:  "kubelet→nodecontroller",
			OK:     []time.Duration{50 * ms, 100 * ms, 150 * ms, 200 * ms, 250 * ms, 721 * ms, 722 * ms, 723 * ms, 800 * ms, 900 * ms},
			Failed: []time.Duration{605 * ms, 606 * ms},
		}},
		Marks: []upgradesim.Mark{
			{At: 500 * ms, Kind: "fault", Text: "partition kubelet and nodecontroller"},
			{At: 600 * ms, Kind: "kill", Text: "nodecontroller"},
			{At: 700 * ms, Kind: "heal", Text: "kubelet and nodecontroller"},
		},
	}
}

// TestTimelineText pins the text timeline of sampleTimeline
// (testdata/timeline.txt; rewrite with -rewrite).
func TestTimelineText(t *testing.T) {
	datadriven.RunTest(t, "testdata/timeline.txt", func(t *testing.T, d *datadriven.TestData) string {
		return sampleTimeline().Text()
	})
}

// TestTimelineSVG checks the SVG is well-formed and draws every segment,
// step and call slice; testdata/timeline.svg is the example it draws
// (rewritten with -rewrite).
func TestTimelineSVG(t *testing.T) {
	svg := sampleTimeline().SVG()
	dec := xml.NewDecoder(strings.NewReader(svg))
	counts := map[string]int{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if el, ok := tok.(xml.StartElement); ok {
			counts[el.Name.Local]++
		}
	}
	assert.Equal(t, 1, counts["svg"])
	// 1 background, 4+5+6 segments, 8 slices with acknowledged calls and
	// 1 with failed ones, 7 legend swatches.
	assert.Equal(t, 1+4+5+6+8+1+7, counts["rect"])
	assert.Contains(t, svg, `plan &#34;sample&#34;, seed 42`)
	assert.Contains(t, svg, "5. upgrade nodecontroller to v2 without drain")
	assert.Contains(t, svg, "kubelet→nodecontroller partitioned")
	path := "testdata/timeline.svg"
	if f := flag.Lookup("rewrite"); f != nil && f.Value.String() == "true" {
		require.NoError(t, os.WriteFile(path, []byte(svg), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), svg, "the SVG changed: rewrite it with -rewrite and look at it")
}
