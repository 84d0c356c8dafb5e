package tutorialtest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

func TestTranslateShellForms(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  string
	}{
		{line: "mkdir hello && cd hello", want: []string{"mkdir hello", "cd hello"}},
		{line: "go mod edit -replace=a=$LOCKSTEP", want: []string{"exec go mod edit -replace=a=$LOCKSTEP"}},
		{line: "bin/controller -api v2 &", want: []string{"jobstart bin/controller -api v2"}},
		{line: "kill %1; wait %1; bin/controller &", want: []string{"jobkill %1", "jobwait %1", "jobstart bin/controller"}},
		{line: "kill $(jobs -p); wait", want: []string{"jobkill all", "jobwait all"}},
		{line: "kill", err: "kill needs a job"},
		{line: "wait 1234", err: "want %N"},
		{line: "echo 'hi'", err: "is not a plain word"},
		{line: "ls | wc -l", err: "is not a plain word"},
	} {
		got, err := translate(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("translate(%q) = %v, %v; want an error with %q", tc.line, got, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("translate(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestPatternMatchesLoosely(t *testing.T) {
	for _, tc := range []struct {
		expected string
		output   string
		match    bool
	}{
		{"report 1 acknowledged after 1ms", "2026/12/01 10:00:00 report 1 acknowledged after 1.607s", true},
		{"report 1 acknowledged after 1ms", "report 2 acknowledged after 1ms", false},
		{"controller 1.0.0 (instance 236c46ef517f4ea3): ready; as of 2026-12-01T10:00:00Z",
			"controller 1.0.0 (instance 0123456789abcdef): ready; as of 2026-12-01T13:44:40+01:00", true},
		{"nodeinfo  1.0.0    lsfp1:…  agent   1", "nodeinfo  1.0.0    lsfp1:f63403f9e0  agent  1", true},
		{"nodeinfo  1.0.0    lsfp1:…  agent   1", "nodeinfo  2.0.0    lsfp1:f63403f9e0  agent  1", false},
		{"a (b) [c] 2.0.0", "a (b) [c] 2x0x0", false},
	} {
		got := regexp.MustCompile(Pattern(tc.expected)).MatchString(tc.output)
		if got != tc.match {
			t.Errorf("Pattern(%q) = %q: matching %q = %v, want %v", tc.expected, Pattern(tc.expected), tc.output, got, tc.match)
		}
	}
}

func TestScriptOfBlocks(t *testing.T) {
	md := "# T\n\n## 1. Go\n\n```sh\nmkdir m && cd m\n```\n\n" +
		"```go main.go\npackage main\n```\n\n" +
		"```yaml\nnot: run\n```\n\n" +
		"```console\nbackground line\n$ go version\ngo version …\n```\n\n" +
		"## Where next\n\n```sh\nnot run\n```\n"
	out, err := Script([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	a := txtar.Parse(out)
	want := "\n# ## 1. Go\nmark\nmkdir m\ncd m\nmkdir .\ncp $WORK/blocks/0 main.go\n" +
		"waitfor $WORK/expect/1\nmark\nrunexpect $WORK/expect/2 go version\njobkill all\njobwait all\n"
	if string(a.Comment) != want {
		t.Errorf("script:\n%s\nwant:\n%s", a.Comment, want)
	}
	files := map[string]string{}
	for _, f := range a.Files {
		files[f.Name] = string(f.Data)
	}
	if files["blocks/0"] != "package main\n" || files["expect/1"] != "background line\n" || files["expect/2"] != `go version .*`+"\n" {
		t.Errorf("files: %q", files)
	}
	if _, err := Script([]byte("```sh\nrm -rf 'x'\n```\n")); err == nil {
		t.Error("a command the script cannot run as written is an error")
	}
	if _, err := Script([]byte("```go ../x.go\n```\n")); err == nil {
		t.Error("a file outside the tutorial's folder is an error")
	}
}
