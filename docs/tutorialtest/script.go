// Package tutorialtest runs docs/tutorial.md as written: it turns the
// tutorial's code blocks into a testscript script (github.com/rogpeppe/
// go-internal/testscript) and runs it from an empty folder against this
// checkout, so a step that breaks fails make test.
//
// It is a module of its own so that testscript stays out of the
// framework's go.mod; it imports nothing of lockstep (the tutorial's
// module points at the checkout with a replace).
//
// What runs, in order, up to the heading "## Where next":
//
//   - a ```sh block: each command, as a shell would run it (see
//     [translate] for the forms understood: `a && b`, `a; b`, `cd`,
//     `mkdir`, `cmd &` as a job, `kill %N` and `kill $(jobs -p)`,
//     `wait %N` and `wait`, anything else run as a program);
//   - a block whose info string names a file after the language
//     (```go cmd/agent/main.go): the file is written, as the reader would;
//   - a ```console block: each line that starts with "$ " is a command run
//     at once, the lines below it what it must print; other lines are what
//     the jobs running in the background must print (since the previous
//     block of commands) before the script goes on. Lines match loosely:
//     "…" stands for anything, a duration for any duration, a 16-digit hex
//     id for any id, an RFC 3339 time for any time, two or more spaces for
//     any number of spaces.
//
// Other blocks (yaml shown for reading, output of commands not run) are
// not run.
package tutorialtest

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// End is the heading at which the tutorial's runnable part ends.
const End = "## Where next"

// Script returns the testscript of a tutorial: its commands in order, the
// files it writes and the outputs it expects, the latter two as files of
// the script's archive (blocks/N, expect/N).
func Script(markdown []byte) ([]byte, error) {
	g := &generator{}
	sc := bufio.NewScanner(bytes.NewReader(markdown))
	sc.Buffer(nil, 1<<20)
	line := 0
	var fence string // the open block's info string
	var body []string
	open := false
	for sc.Scan() {
		line++
		text := sc.Text()
		if !open && strings.HasPrefix(text, End) {
			break
		}
		if !open && strings.HasPrefix(text, "## ") {
			g.comment(text)
		}
		if strings.HasPrefix(text, "```") {
			if !open {
				open, fence, body = true, strings.TrimSpace(strings.TrimPrefix(text, "```")), nil
				continue
			}
			open = false
			if err := g.block(fence, body); err != nil {
				return nil, fmt.Errorf("tutorial line %d: %w", line, err)
			}
			continue
		}
		if open {
			body = append(body, text)
		}
	}
	if open {
		return nil, fmt.Errorf("tutorial: a code block is not closed")
	}
	g.cmd("jobkill all")
	g.cmd("jobwait all")
	return txtar.Format(&txtar.Archive{Comment: g.script.Bytes(), Files: g.files}), nil
}

type generator struct {
	script bytes.Buffer
	files  []txtar.File
}

func (g *generator) comment(s string) { fmt.Fprintf(&g.script, "\n# %s\n", s) }
func (g *generator) cmd(s string)     { fmt.Fprintln(&g.script, s) }

// file adds a file to the archive and returns its path in the script.
func (g *generator) file(kind string, lines []string) string {
	name := fmt.Sprintf("%s/%d", kind, len(g.files))
	g.files = append(g.files, txtar.File{Name: name, Data: []byte(strings.Join(lines, "\n") + "\n")})
	return "$WORK/" + name
}

func (g *generator) block(info string, body []string) error {
	lang, file, _ := strings.Cut(info, " ")
	file = strings.TrimSpace(file)
	switch {
	case file != "":
		if path.IsAbs(file) || strings.Contains(file, "..") || strings.ContainsAny(file, " '\"$") {
			return fmt.Errorf("file name %q: want a plain relative path", file)
		}
		src := g.file("blocks", body)
		g.cmd("mkdir " + path.Dir(file))
		g.cmd("cp " + src + " " + file)
	case lang == "sh":
		g.cmd("mark")
		for _, l := range joinContinued(body) {
			cmds, err := translate(l)
			if err != nil {
				return err
			}
			for _, c := range cmds {
				g.cmd(c)
			}
		}
	case lang == "console":
		return g.console(body)
	}
	return nil
}

// console turns a console block into runs of its "$ " commands and waits
// for the other lines in the jobs' output.
func (g *generator) console(body []string) error {
	var waits []string
	flushWaits := func() {
		if len(waits) > 0 {
			g.cmd("waitfor " + g.file("expect", waits))
			waits = nil
		}
	}
	for i := 0; i < len(body); i++ {
		l := body[i]
		if !strings.HasPrefix(l, "$ ") {
			if strings.TrimSpace(l) != "" {
				waits = append(waits, Pattern(l))
			}
			continue
		}
		flushWaits()
		cmds, err := translate(strings.TrimPrefix(l, "$ "))
		if err != nil {
			return err
		}
		if len(cmds) != 1 || !strings.HasPrefix(cmds[0], "exec ") {
			return fmt.Errorf("console command %q: want one program to run", l)
		}
		var out []string
		for i+1 < len(body) && !strings.HasPrefix(body[i+1], "$ ") {
			i++
			if strings.TrimSpace(body[i]) != "" {
				out = append(out, Pattern(body[i]))
			}
		}
		g.cmd("mark")
		g.cmd("runexpect " + g.file("expect", out) + " " + strings.TrimPrefix(cmds[0], "exec "))
	}
	flushWaits()
	return nil
}

// joinContinued joins lines ending in a backslash with the next, and drops
// comments and blank lines.
func joinContinued(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " "), "\\"); ok {
			cur += s + " "
			continue
		}
		cur += l
		if strings.TrimSpace(cur) != "" {
			out = append(out, strings.Join(strings.Fields(cur), " "))
		}
		cur = ""
	}
	return out
}

var (
	jobSpec = regexp.MustCompile(`^%[0-9]+$`)
	// simpleWord is what a command's words may be: no quoting, globbing
	// or substitution other than $NAME, which both shells expand.
	simpleWord = regexp.MustCompile(`^[A-Za-z0-9_./:@=,%+$-]+$`)
)

// translate turns one shell command line into script commands.
func translate(line string) ([]string, error) {
	var out []string
	for _, part := range splitList(line) {
		bg := false
		if s, ok := strings.CutSuffix(part, "&"); ok {
			part, bg = strings.TrimSpace(s), true
		}
		words := strings.Fields(part)
		if len(words) == 0 {
			return nil, fmt.Errorf("command line %q: an empty command", line)
		}
		if strings.Join(words[1:], " ") == "$(jobs -p)" && words[0] == "kill" {
			out = append(out, "jobkill all")
			continue
		}
		for _, w := range words {
			if !simpleWord.MatchString(w) {
				return nil, fmt.Errorf("command line %q: %q is not a plain word (quote-free, no substitutions but $NAME)", line, w)
			}
		}
		switch name, args := words[0], words[1:]; {
		case bg:
			out = append(out, "jobstart "+strings.Join(words, " "))
		case name == "cd" || name == "mkdir":
			if len(args) != 1 {
				return nil, fmt.Errorf("command line %q: %s takes one folder", line, name)
			}
			out = append(out, name+" "+args[0])
		case name == "kill" || name == "wait":
			if name == "kill" && len(args) == 0 {
				return nil, fmt.Errorf("command line %q: kill needs a job", line)
			}
			if len(args) == 0 {
				args = []string{"all"}
			}
			for _, a := range args {
				if a != "all" && !jobSpec.MatchString(a) {
					return nil, fmt.Errorf("command line %q: %s of %q: want %%N", line, name, a)
				}
			}
			out = append(out, "job"+name+" "+strings.Join(args, " "))
		default:
			out = append(out, "exec "+strings.Join(words, " "))
		}
	}
	return out, nil
}

// splitList splits a command line at && and ; (which, for a tutorial that
// stops at the first failure, mean the same), keeping a trailing & with its
// command.
func splitList(line string) []string {
	var out []string
	for _, a := range strings.Split(line, "&&") {
		for _, b := range strings.Split(a, ";") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

// loose are the parts of an expected line that match any value of their
// kind: "…", RFC 3339 times, durations, 16-digit hex ids, and runs of
// spaces (a table's columns, as wide as their widest cell); each group
// names the pattern that replaces it.
var (
	loose = regexp.MustCompile(`(…)|(` + rfc3339 + `)|\b(` + duration + `)\b|\b([0-9a-f]{16})\b|(  +)`)
	kinds = []string{`.*`, rfc3339, duration, `[0-9a-f]{16}`, ` +`}
)

const (
	rfc3339  = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)`
	duration = `(?:\d+(?:\.\d+)?(?:ns|µs|ms|s|m|h))+`
)

// Pattern is the regular expression an expected line of output becomes:
// the line itself (without surrounding space), anywhere in a line of
// output, with its loose parts matching any value of their kind.
func Pattern(line string) string {
	line = strings.TrimSpace(line)
	var b strings.Builder
	last := 0
	for _, m := range loose.FindAllStringSubmatchIndex(line, -1) {
		b.WriteString(regexp.QuoteMeta(line[last:m[0]]))
		for k := range kinds {
			if m[2+2*k] >= 0 {
				b.WriteString(kinds[k])
				break
			}
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(line[last:]))
	return b.String()
}
