// Package report writes a benchmark run as Markdown: the machine and run
// facts, the targets with the ratio measured against each and whether it
// was met, then one section per workload with its table of figures and the
// plots that go with it.
package report

import (
	"fmt"
	"io"
	"strings"
)

// Doc is one run's report.
type Doc struct {
	Title string
	// Preamble is Markdown printed under the title.
	Preamble string
	// Facts are the run's machine and run facts (machine, date, commit),
	// printed in order as a two-column table.
	Facts [][2]string
	// Targets are the project's targets with what this run measured.
	Targets  []Target
	Sections []Section
}

// Verdict is whether a run met a target.
type Verdict int

const (
	// NotMeasured is a target this run has no figure for.
	NotMeasured Verdict = iota
	Met
	Missed
)

func (v Verdict) String() string {
	switch v {
	case Met:
		return "**met**"
	case Missed:
		return "**missed**"
	default:
		return "not measured"
	}
}

// Target is one target and what this run measured against it.
type Target struct {
	ID, Workload, Want string
	// Measured says what the run measured, the ratio included.
	Measured string
	Verdict  Verdict
}

// Section is one workload.
type Section struct {
	Title string
	// Intro is Markdown before the table: what was run and how.
	Intro  string
	Tables []Table
	// Plots are image paths relative to the report, each with its caption.
	Plots [][2]string
	// Notes is Markdown after the table.
	Notes string
}

// Table is a Markdown table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Write writes d as Markdown.
func Write(w io.Writer, d Doc) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	if d.Preamble != "" {
		b.WriteString(strings.TrimSpace(d.Preamble) + "\n\n")
	}
	if len(d.Facts) > 0 {
		facts := Table{Header: []string{"", ""}}
		for _, f := range d.Facts {
			facts.Rows = append(facts.Rows, []string{f[0], f[1]})
		}
		writeTable(&b, facts)
	}
	if len(d.Targets) > 0 {
		b.WriteString("## Targets\n\n")
		t := Table{Header: []string{"#", "workload", "target", "measured in this run", "verdict"}}
		for _, tg := range d.Targets {
			t.Rows = append(t.Rows, []string{tg.ID, tg.Workload, tg.Want, tg.Measured, tg.Verdict.String()})
		}
		writeTable(&b, t)
	}
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "## %s\n\n", s.Title)
		if s.Intro != "" {
			b.WriteString(strings.TrimSpace(s.Intro) + "\n\n")
		}
		for _, t := range s.Tables {
			writeTable(&b, t)
		}
		for _, p := range s.Plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n", cell(p[1]), p[0])
		}
		if s.Notes != "" {
			b.WriteString(strings.TrimSpace(s.Notes) + "\n\n")
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func writeTable(b *strings.Builder, t Table) {
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.Header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + cell(c) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|" + strings.Repeat("---|", len(t.Header)) + "\n")
	for _, r := range t.Rows {
		row(r)
	}
	b.WriteString("\n")
}

// cell escapes what would break a table cell: pipes and line breaks.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", " ")
}
