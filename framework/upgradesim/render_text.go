package upgradesim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// textColumns is about how many columns the text timeline spans.
const textColumns = 72

// niceSteps are the column widths the text timeline chooses from.
var niceSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	20 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
}

// columnWidth picks a round column width that fits d in about textColumns
// columns.
func columnWidth(d time.Duration) time.Duration {
	for _, w := range niceSteps {
		if d <= w*textColumns {
			return w
		}
	}
	return time.Duration(int64(d)/textColumns + 1)
}

// shortDuration prints a duration compactly for axes: 0s, 250ms, 1.5s.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	default:
		return strconv.FormatFloat(float64(d.Milliseconds())/1000, 'f', -1, 64) + "s"
	}
}

// symbols assigns one character to each value of the timeline: replica
// versions by position (1, 2, …), agreed contract versions by order (A, B,
// …).
type symbols struct {
	agreed []string
}

func newSymbols(tl *Timeline) symbols {
	seen := map[string]bool{}
	var s symbols
	for _, row := range tl.Rows {
		if row.Kind != RowPair {
			continue
		}
		for _, seg := range row.Segments {
			if seg.State == "agreed" && !strings.Contains(seg.Value, ",") && !seen[seg.Value] {
				seen[seg.Value] = true
				s.agreed = append(s.agreed, seg.Value)
			}
		}
	}
	sort.Strings(s.agreed)
	return s
}

func versionSymbol(i int) byte {
	if i < 9 {
		return byte('1' + i)
	}
	return byte('a' + i - 9)
}

func (s symbols) agreedSymbol(value string) byte {
	if strings.Contains(value, ",") {
		return '+'
	}
	for i, v := range s.agreed {
		if v == value {
			return byte('A' + i%26)
		}
	}
	return '?'
}

// cell returns the character of a row over [from, to): the most telling
// state in the span (a gap or a block shows, however short), else the
// latest version.
func (s symbols) cell(row Row, from, to time.Duration) byte {
	best, rank := byte(' '), -1
	for _, seg := range row.Segments {
		if seg.To <= from || seg.From >= to {
			continue
		}
		var ch byte
		var r int
		switch {
		case row.Kind == RowReplica && seg.State == "down":
			ch, r = '.', 3
		case row.Kind == RowReplica && seg.State == "draining":
			ch, r = '~', 2
		case row.Kind == RowReplica:
			ch, r = versionSymbol(max(0, indexOf(row.Versions, seg.Value))), 1
		case seg.State == "partitioned":
			ch, r = '#', 3
		case seg.State == "blocked":
			ch, r = '-', 2
		case seg.State == "agreed":
			ch, r = s.agreedSymbol(seg.Value), 1
		default:
			ch, r = ' ', 0
		}
		if r > rank || (r == rank && r == 1) {
			best, rank = ch, r
		}
	}
	return best
}

func indexOf(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

// Text prints the timeline for a test log: one column per time slice,
// a row per replica and per client replica's pair, calls per slice, then
// the steps and marks with their times and a legend.
func (tl *Timeline) Text() string {
	g := newTextGrid(tl)
	fmt.Fprintf(&g.b, "timeline of plan %q, seed %d: %s, one column = %s\n",
		tl.Plan, tl.Seed, tl.Duration.Round(time.Millisecond), g.width)
	g.axisAndSteps()
	for _, row := range tl.Rows {
		cells := make([]byte, g.cols)
		for col := range cells {
			cells[col] = g.syms.cell(row, time.Duration(col)*g.width, time.Duration(col+1)*g.width)
		}
		g.line(row.Label, string(cells))
	}
	g.calls()
	g.marks()
	g.legend()
	g.lists()
	return g.b.String()
}

// textGrid is a timeline being printed: its columns, the width of its
// labels, and the text so far.
type textGrid struct {
	tl         *Timeline
	width      time.Duration // the time one column covers
	cols       int
	syms       symbols
	labelWidth int
	b          strings.Builder
}

func newTextGrid(tl *Timeline) *textGrid {
	width := columnWidth(max(tl.Duration, time.Millisecond))
	g := &textGrid{tl: tl, width: width, cols: int(tl.Duration/width) + 1, syms: newSymbols(tl), labelWidth: len("steps")}
	for _, row := range tl.Rows {
		g.labelWidth = max(g.labelWidth, utf8.RuneCountInString(row.Label))
	}
	for _, cs := range tl.Calls {
		g.labelWidth = max(g.labelWidth, utf8.RuneCountInString(cs.Label)+len("calls "))
	}
	return g
}

// line writes one labelled row of cells.
func (g *textGrid) line(label string, cells string) {
	pad := g.labelWidth - utf8.RuneCountInString(label)
	g.b.WriteString(label + strings.Repeat(" ", pad) + "  " + strings.TrimRight(cells, " ") + "\n")
}

// axisAndSteps writes the time axis and the row of step numbers.
func (g *textGrid) axisAndSteps() {
	axis := []byte(strings.Repeat(" ", g.cols+12))
	for col := 0; col < g.cols; col += 10 {
		copy(axis[col:], shortDuration(time.Duration(col)*g.width))
	}
	g.line("", string(axis))

	steps := []byte(strings.Repeat(" ", g.cols+4))
	for _, st := range g.tl.Steps {
		col := int(st.From / g.width)
		num := strconv.Itoa(st.Number)
		if col+len(num) <= len(steps) && strings.TrimSpace(string(steps[max(0, col-1):col+len(num)])) == "" {
			copy(steps[col:], num)
		}
	}
	g.line("steps", string(steps))
}

// calls writes each client's calls per column: bars for those
// acknowledged, digits for those failed.
func (g *textGrid) calls() {
	cols := g.cols
	maxOK := 0
	buckets := make([][3][]int, len(g.tl.Calls))
	for i, cs := range g.tl.Calls {
		for k, times := range [][]time.Duration{cs.OK, cs.Failed, cs.Abandoned} {
			buckets[i][k] = make([]int, cols)
			for _, at := range times {
				buckets[i][k][min(cols-1, int(at/g.width))]++
			}
		}
		for _, n := range buckets[i][0] {
			maxOK = max(maxOK, n)
		}
	}
	bars := []rune(" ▁▂▃▄▅▆▇█")
	for i, cs := range g.tl.Calls {
		ok := make([]rune, cols)
		failed := make([]rune, cols)
		for col := 0; col < cols; col++ {
			n := buckets[i][0][col]
			ok[col] = ' '
			if n > 0 {
				ok[col] = bars[1+(n*(len(bars)-2)+maxOK-1)/maxOK]
			}
			failed[col] = countSymbol(buckets[i][1][col])
		}
		g.line("calls "+cs.Label, string(ok))
		if len(cs.Failed) > 0 {
			g.line("  failed", string(failed))
		}
	}
}

// marks writes the row of marks (kills, faults, heals, violations).
func (g *textGrid) marks() {
	if len(g.tl.Marks) == 0 {
		return
	}
	marks := []byte(strings.Repeat(" ", g.cols))
	for _, m := range g.tl.Marks {
		col := min(g.cols-1, int(m.At/g.width))
		ch := markSymbol(m.Kind)
		if marks[col] == ' ' || ch == '!' {
			marks[col] = ch
		}
	}
	g.line("marks", string(marks))
}

// legend writes what each symbol means.
func (g *textGrid) legend() {
	b := &g.b
	b.WriteString("legend: replicas: ")
	var vs []string
	for _, row := range g.tl.Rows {
		if row.Kind == RowReplica {
			for i, v := range row.Versions {
				vs = appendUnique(vs, fmt.Sprintf("%c=%s", versionSymbol(i), v))
			}
		}
	}
	b.WriteString(strings.Join(vs, " ") + " ~=draining .=down; sessions: ")
	var as []string
	for _, v := range g.syms.agreed {
		as = append(as, fmt.Sprintf("%c=%s", g.syms.agreedSymbol(v), v))
	}
	b.WriteString(strings.Join(as, " ") + " +=several -=blocked #=partitioned; " +
		"calls: bars=acknowledged, digits=failed; marks: x=kill #=fault +=heal !=violation\n")
}

// lists writes the steps, the events in time order, and the calls'
// counts.
func (g *textGrid) lists() {
	b, tl := &g.b, g.tl
	b.WriteString("steps:\n")
	for _, st := range tl.Steps {
		fmt.Fprintf(b, "  %3d  %7s → %-7s  %s\n", st.Number, shortDuration(st.From.Round(time.Millisecond)),
			shortDuration(st.To.Round(time.Millisecond)), st.Text)
	}
	events := append(append([]Mark{}, tl.Marks...), tl.Notes...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].At < events[j].At })
	if len(events) > 0 {
		b.WriteString("events:\n")
		for _, m := range events {
			fmt.Fprintf(b, "  %7s  %-9s %s\n", shortDuration(m.At.Round(time.Millisecond)), m.Kind, m.Text)
		}
	}
	for _, cs := range tl.Calls {
		fmt.Fprintf(b, "calls %s: %d acknowledged, %d failed, %d abandoned\n",
			cs.Label, len(cs.OK), len(cs.Failed), len(cs.Abandoned))
	}
}

func countSymbol(n int) rune {
	switch {
	case n == 0:
		return ' '
	case n < 10:
		return rune('0' + n)
	}
	return '+'
}

func markSymbol(kind string) byte {
	switch kind {
	case "kill":
		return 'x'
	case "fault":
		return '#'
	case "heal":
		return '+'
	case "violation":
		return '!'
	}
	return '*'
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}
