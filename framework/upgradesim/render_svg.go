package upgradesim

import (
	"fmt"
	"html"
	"strings"
	"time"
	"unicode/utf8"
)

// SVG layout, in pixels.
const (
	svgPlotWidth = 960
	svgRowHeight = 18
	svgRowGap    = 6
	svgCharWidth = 7
	svgMargin    = 12
	svgCallsRows = 40
)

// svgVersionColors colour replica versions by position, and
// svgAgreedColors agreed contract versions by order.
var (
	svgVersionColors = []string{"#4c78a8", "#54a24b", "#b279a2", "#9d755d", "#72b7b2", "#eeca3b"}
	svgAgreedColors  = []string{"#6baed6", "#74c476", "#c994c7", "#bcbddc", "#9ecae1", "#fdd0a2"}
)

const (
	svgDown        = "#e6e6e6"
	svgDraining    = "#f2cf5b"
	svgBlocked     = "#f58518"
	svgPartitioned = "#e45756"
	svgSeveral     = "#8c6bb1"
	svgOK          = "#54a24b"
	svgFailed      = "#e45756"
)

// SVG draws the timeline: a lane per replica and per client replica's
// pair, coloured by version and session state, step boundaries as
// numbered dashed lines, calls per time slice as bars (acknowledged up,
// failed down), marks for kills, faults and violations, and the step list
// beneath. It is self-contained and needs no fonts or scripts.
func (tl *Timeline) SVG() string {
	c := newSVGCanvas(tl)
	b := &c.b
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12" xml:space="preserve">`+"\n",
		c.width, c.height, c.width, c.height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", svgMargin, svgMargin+12,
		esc(fmt.Sprintf("plan %q, seed %d: %s", tl.Plan, tl.Seed, tl.Duration.Round(time.Millisecond))))
	c.axis()
	c.lanes()
	c.calls()
	c.marks()
	c.stepsAndLegend()
	b.WriteString("</svg>\n")
	return b.String()
}

// svgCanvas is a timeline being drawn: where its parts go, and the SVG so
// far.
type svgCanvas struct {
	tl   *Timeline
	syms symbols
	// left is where the plot begins, after the labels; total is the time
	// it spans.
	left  int
	total time.Duration
	// top, callsTop and stepsTop are where the lanes, the calls and the
	// step list begin.
	top, callsTop, stepsTop int
	width, height           int
	b                       strings.Builder
}

func newSVGCanvas(tl *Timeline) *svgCanvas {
	labelChars := 10
	for _, row := range tl.Rows {
		labelChars = max(labelChars, utf8.RuneCountInString(row.Label))
	}
	for _, cs := range tl.Calls {
		labelChars = max(labelChars, utf8.RuneCountInString(cs.Label)+len("calls "))
	}
	c := &svgCanvas{tl: tl, syms: newSymbols(tl), left: svgMargin + labelChars*svgCharWidth + 10,
		total: max(tl.Duration, time.Millisecond), top: svgMargin + 56}
	c.callsTop = c.top + len(tl.Rows)*(svgRowHeight+svgRowGap) + 10
	c.stepsTop = c.callsTop + len(tl.Calls)*(2*svgCallsRows+svgRowGap) + 30
	c.height = c.stepsTop + (len(tl.Steps)+4)*15 + svgMargin
	c.width = c.left + svgPlotWidth + svgMargin + 40
	return c
}

// x is the abscissa of time t.
func (c *svgCanvas) x(t time.Duration) float64 {
	return float64(c.left) + float64(t)/float64(c.total)*svgPlotWidth
}

// axis draws the time axis and the step boundaries.
func (c *svgCanvas) axis() {
	b := &c.b
	tick := columnWidth(c.total) * 10
	for t := time.Duration(0); t <= c.total; t += tick {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/>`+"\n", c.x(t), c.top-8, c.x(t), c.callsTop-6)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#666">%s</text>`+"\n", c.x(t)+2, c.top-10, shortDuration(t))
	}
	for _, st := range c.tl.Steps {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="3,3"><title>%s</title></line>`+"\n",
			c.x(st.From), c.top-34, c.x(st.From), c.stepsTop-20, esc(fmt.Sprintf("%d. %s", st.Number, st.Text)))
		fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#444">%d</text>`+"\n", c.x(st.From)+2, c.top-26, st.Number)
	}
}

// lanes draws a lane per row, coloured by version and session state.
func (c *svgCanvas) lanes() {
	b := &c.b
	for i, row := range c.tl.Rows {
		y := c.top + i*(svgRowHeight+svgRowGap)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", svgMargin, y+13, esc(row.Label))
		for _, seg := range row.Segments {
			if seg.To <= seg.From {
				continue
			}
			fill, label := svgSegmentStyle(row, seg, c.syms)
			w := c.x(seg.To) - c.x(seg.From)
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
				c.x(seg.From), y, w, svgRowHeight, fill,
				esc(fmt.Sprintf("%s %s %s (%s → %s)", row.Label, seg.State, seg.Value, shortDuration(seg.From.Round(time.Millisecond)), shortDuration(seg.To.Round(time.Millisecond)))))
			if label != "" && w > float64(utf8.RuneCountInString(label)*svgCharWidth+4) {
				fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="white">%s</text>`+"\n", c.x(seg.From)+3, y+13, esc(label))
			}
		}
	}
}

// calls draws the calls per time slice: acknowledged up, failed down.
func (c *svgCanvas) calls() {
	b := &c.b
	slice := columnWidth(c.total)
	cols := int(c.total/slice) + 1
	maxCount := 1
	counts := make([][2][]int, len(c.tl.Calls))
	for i, cs := range c.tl.Calls {
		for k, times := range [][]time.Duration{cs.OK, cs.Failed} {
			counts[i][k] = make([]int, cols)
			for _, at := range times {
				counts[i][k][min(cols-1, int(at/slice))]++
			}
			for _, n := range counts[i][k] {
				maxCount = max(maxCount, n)
			}
		}
	}
	for i, cs := range c.tl.Calls {
		base := c.callsTop + i*(2*svgCallsRows+svgRowGap) + svgCallsRows
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", svgMargin, base-4, esc("calls "+cs.Label))
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`+"\n", c.left, base, c.left+svgPlotWidth, base)
		for col := 0; col < cols; col++ {
			x0, x1 := c.x(time.Duration(col)*slice), c.x(time.Duration(col+1)*slice)
			if n := counts[i][0][col]; n > 0 {
				h := float64(n) / float64(maxCount) * (svgCallsRows - 2)
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%d acknowledged</title></rect>`+"\n",
					x0, float64(base)-h, max(1, x1-x0-1), h, svgOK, n)
			}
			if n := counts[i][1][col]; n > 0 {
				h := float64(n) / float64(maxCount) * (svgCallsRows - 2)
				fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%.1f" fill="%s"><title>%d failed</title></rect>`+"\n",
					x0, base, max(1, x1-x0-1), h, svgFailed, n)
			}
		}
	}
}

// marks draws the kills, faults, heals and violations.
func (c *svgCanvas) marks() {
	b := &c.b
	for _, m := range c.tl.Marks {
		color := "#444"
		switch m.Kind {
		case "kill", "violation":
			color = svgFailed
		case "fault":
			color = svgBlocked
		case "heal":
			color = svgOK
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="%s" font-weight="bold">%c<title>%s</title></text>`+"\n",
			c.x(m.At)-3, c.callsTop-8, color, markSymbol(m.Kind), esc(m.Kind+": "+m.Text))
	}
}

// stepsAndLegend draws the step list and the legend beneath the plot.
func (c *svgCanvas) stepsAndLegend() {
	b := &c.b
	y := c.stepsTop
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">steps</text>`+"\n", svgMargin, y)
	for _, st := range c.tl.Steps {
		y += 15
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", svgMargin, y,
			esc(fmt.Sprintf("%3d  %7s → %-7s %s", st.Number, shortDuration(st.From.Round(time.Millisecond)), shortDuration(st.To.Round(time.Millisecond)), st.Text)))
	}
	y += 25
	legend := [][2]string{{svgDown, "down"}, {svgDraining, "draining"}, {svgBlocked, "blocked"},
		{svgPartitioned, "partitioned"}, {svgSeveral, "several versions"}, {svgOK, "acknowledged"}, {svgFailed, "failed"}}
	lx := svgMargin
	for _, l := range legend {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, y-10, l[0], lx+16, y, esc(l[1]))
		lx += 16 + len(l[1])*svgCharWidth + 14
	}
}

// svgSegmentStyle returns a segment's fill and the label drawn on it.
func svgSegmentStyle(row Row, seg Segment, syms symbols) (string, string) {
	if row.Kind == RowReplica {
		switch seg.State {
		case "down":
			return svgDown, ""
		case "draining":
			return svgDraining, "~" + seg.Value
		}
		i := max(0, indexOf(row.Versions, seg.Value))
		return svgVersionColors[i%len(svgVersionColors)], seg.Value
	}
	switch seg.State {
	case "agreed":
		if strings.Contains(seg.Value, ",") {
			return svgSeveral, seg.Value
		}
		i := int(syms.agreedSymbol(seg.Value) - 'A')
		if i < 0 {
			i = 0
		}
		return svgAgreedColors[i%len(svgAgreedColors)], seg.Value
	case "blocked":
		return svgBlocked, "blocked"
	case "partitioned":
		return svgPartitioned, "partitioned"
	}
	return svgDown, ""
}

func esc(s string) string { return html.EscapeString(s) }
