package tutorialtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// tutorialPath is docs/tutorial.md, from this folder.
const tutorialPath = "../tutorial.md"

// waitLimit bounds each wait for output or for a job to exit (a loaded
// machine builds and drains slowly; a step that never happens fails).
const waitLimit = 2 * time.Minute

// passedEnv is what the script's go commands inherit from the test's go
// environment: the module cache, build cache and proxy settings, so the
// tutorial builds from the caches make test has already filled.
var passedEnv = []string{"GOMODCACHE", "GOCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE",
	"GOINSECURE", "GOFLAGS", "GOTOOLCHAIN", "GOPATH"}

// TestTutorial runs docs/tutorial.md from an empty folder: every command
// and file of its steps, waiting for the output it shows. The one change
// made to the text is the controller's port, 8441, replaced by a free one
// so that runs can go side by side on one machine.
func TestTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the tutorial's programs")
	}
	md, err := os.ReadFile(tutorialPath)
	if err != nil {
		t.Fatal(err)
	}
	md = bytes.ReplaceAll(md, []byte("127.0.0.1:8441"), []byte(freeAddr(t)))
	script, err := Script(md)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "tutorial.txtar")
	if err := os.WriteFile(file, script, 0o644); err != nil {
		t.Fatal(err)
	}
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	goEnv := passedGoEnv(t)
	testscript.Run(t, testscript.Params{
		Files: []string{file},
		Setup: func(env *testscript.Env) error {
			env.Setenv("LOCKSTEP", checkout)
			for k, v := range goEnv {
				env.Setenv(k, v)
			}
			js := &jobs{env: append([]string(nil), env.Vars...)}
			env.Values[jobsKey{}] = js
			env.Defer(js.killAll)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mark":      func(ts *testscript.TestScript, _ bool, _ []string) { jobsOf(ts).mark() },
			"jobstart":  cmdJobStart,
			"jobkill":   cmdJobKill,
			"jobwait":   cmdJobWait,
			"waitfor":   cmdWaitFor,
			"runexpect": cmdRunExpect,
		},
	})
}

// passedGoEnv returns the passedEnv settings as the test's go command sees
// them (from the environment, the go env file, or their defaults, which
// depend on HOME, which the script does not have), leaving out empty ones.
func passedGoEnv(t *testing.T) map[string]string {
	out, err := exec.Command("go", append([]string{"env", "-json"}, passedEnv...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var all map[string]string
	if err := json.Unmarshal(out, &all); err != nil {
		t.Fatalf("go env -json: %v", err)
	}
	env := map[string]string{}
	for k, v := range all {
		if v != "" {
			env[k] = v
		}
	}
	return env
}

// freeAddr returns a 127.0.0.1 address nothing listens on now.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type jobsKey struct{}

// jobs are the script's background commands, numbered as a shell numbers
// its jobs.
type jobs struct {
	env []string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when output arrives or a job exits
	list    map[int]*job
}

type job struct {
	n      int
	line   string
	cmd    *exec.Cmd
	out    bytes.Buffer // stdout and stderr, under jobs.mu
	from   int          // where output since the last mark begins
	done   bool
	exit   error
	exited chan struct{}
}

func jobsOf(ts *testscript.TestScript) *jobs { return ts.Value(jobsKey{}).(*jobs) }

// jobWriter appends a job's output and tells waiters.
type jobWriter struct {
	js *jobs
	j  *job
}

func (w jobWriter) Write(p []byte) (int, error) {
	w.js.mu.Lock()
	defer w.js.mu.Unlock()
	w.j.out.Write(p)
	w.js.notifyLocked()
	return len(p), nil
}

func (js *jobs) notifyLocked() {
	if js.changed != nil {
		close(js.changed)
	}
	js.changed = make(chan struct{})
}

// wake returns a channel closed at the next change.
func (js *jobs) wake() <-chan struct{} {
	if js.changed == nil {
		js.changed = make(chan struct{})
	}
	return js.changed
}

// mark makes later waits look only at output from now on.
func (js *jobs) mark() {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.list {
		j.from = j.out.Len()
	}
}

func (js *jobs) start(ts *testscript.TestScript, args []string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.list == nil {
		js.list = map[int]*job{}
	}
	n := 1
	for k := range js.list {
		n = max(n, k+1)
	}
	name := args[0]
	if strings.Contains(name, "/") {
		name = ts.MkAbs(name)
	}
	cmd := exec.Command(name, args[1:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = append(append([]string(nil), js.env...), "PWD="+cmd.Dir)
	j := &job{n: n, line: strings.Join(args, " "), cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = jobWriter{js, j}, jobWriter{js, j}
	ts.Check(cmd.Start())
	js.list[n] = j
	go func() {
		err := cmd.Wait()
		js.mu.Lock()
		j.done, j.exit = true, err
		js.notifyLocked()
		js.mu.Unlock()
		close(j.exited)
	}()
	ts.Logf("[%d] %d %s", n, cmd.Process.Pid, j.line)
}

// pick returns the jobs a spec names (%N, or all).
func (js *jobs) pick(ts *testscript.TestScript, specs []string) []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	var out []*job
	for _, s := range specs {
		if s == "all" {
			for _, j := range js.list {
				out = append(out, j)
			}
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(s, "%"))
		if err != nil || js.list[n] == nil {
			ts.Fatalf("no such job: %s", s)
		}
		out = append(out, js.list[n])
	}
	return out
}

func cmdJobStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: jobstart program [args...]")
	}
	jobsOf(ts).start(ts, args)
}

// cmdJobKill sends SIGTERM, as the shell's kill does.
func cmdJobKill(ts *testscript.TestScript, neg bool, args []string) {
	for _, j := range jobsOf(ts).pick(ts, args) {
		_ = j.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// cmdJobWait waits for jobs to exit; each must exit with status 0 (the
// tutorial's programs stop gracefully on SIGTERM).
func cmdJobWait(ts *testscript.TestScript, neg bool, args []string) {
	js := jobsOf(ts)
	for _, j := range js.pick(ts, args) {
		select {
		case <-j.exited:
		case <-time.After(waitLimit):
			ts.Fatalf("[%d] %s did not exit within %s", j.n, j.line, waitLimit)
		}
		js.mu.Lock()
		delete(js.list, j.n)
		out := j.out.String()
		js.mu.Unlock()
		ts.Logf("[%d] exited (%v): %s\n%s", j.n, j.exit, j.line, out)
		if j.exit != nil {
			ts.Fatalf("[%d] %s: %v", j.n, j.line, j.exit)
		}
	}
}

// cmdWaitFor waits until the jobs' output since the last mark has a line
// matching each pattern of a file (one per line), in order within a job's
// output.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfor patternfile")
	}
	pats := patterns(ts, args[0])
	js := jobsOf(ts)
	deadline := time.After(waitLimit)
	for {
		js.mu.Lock()
		missing := js.missingLocked(pats)
		wake := js.wake()
		var outs []string
		for _, j := range js.list {
			outs = append(outs, fmt.Sprintf("[%d] %s:\n%s", j.n, j.line, j.out.String()[j.from:]))
		}
		js.mu.Unlock()
		if missing == nil {
			return
		}
		select {
		case <-wake:
		case <-deadline:
			ts.Fatalf("no job printed a line matching %q within %s; their output since the last commands:\n%s",
				missing, waitLimit, strings.Join(outs, "\n"))
		}
	}
}

// missingLocked returns the first pattern no job's output since the mark
// has (each job's lines matched in order), or nil.
func (js *jobs) missingLocked(pats []*regexp.Regexp) *regexp.Regexp {
	lines := map[int][]string{}
	at := map[int]int{}
	for n, j := range js.list {
		lines[n] = strings.Split(j.out.String()[j.from:], "\n")
	}
	for _, p := range pats {
		found := false
		for n, ls := range lines {
			for i := at[n]; i < len(ls); i++ {
				if p.MatchString(ls[i]) {
					at[n], found = i+1, true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return p
		}
	}
	return nil
}

// cmdRunExpect runs a program and checks its output has a line matching
// each pattern of a file, in order.
func cmdRunExpect(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: runexpect patternfile program [args...]")
	}
	pats := patterns(ts, args[0])
	err := ts.Exec(args[1], args[2:]...)
	out := ts.ReadFile("stdout") + ts.ReadFile("stderr")
	if err != nil {
		ts.Fatalf("%s: %v\n%s", strings.Join(args[1:], " "), err, out)
	}
	lines := strings.Split(out, "\n")
	i := 0
	for _, p := range pats {
		for i < len(lines) && !p.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			ts.Fatalf("%s printed no line matching %q (after the lines before it):\n%s", strings.Join(args[1:], " "), p, out)
		}
		i++
	}
}

func patterns(ts *testscript.TestScript, file string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, l := range strings.Split(strings.TrimSpace(ts.ReadFile(file)), "\n") {
		if l != "" {
			out = append(out, regexp.MustCompile(l))
		}
	}
	return out
}

func (js *jobs) killAll() {
	js.mu.Lock()
	list := js.list
	js.mu.Unlock()
	for _, j := range list {
		_ = j.cmd.Process.Kill()
		<-j.exited
	}
}
