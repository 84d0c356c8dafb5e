// Command lockstep-bench is the comparison suite behind `make bench`: it
// runs lockstep beside gRPC, etcd, net/http and connect-go on the
// project's benchmark message and writes docs/benchmarks.md with its SVG
// plots. `make bench-quick` runs it with -quick, a few seconds per
// workload.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/bench/internal/report"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"github.com/lockstep-dev/lockstep/bench/internal/scratch"
	"github.com/lockstep-dev/lockstep/bench/internal/suite"
)

func main() {
	quick := flag.Bool("quick", false, "a few seconds per workload: check that the suite runs")
	rounds := flag.Int("rounds", 3, "rounds per variant")
	out := flag.String("out", "../docs/benchmarks.md", "the report to write")
	plots := flag.String("plots", "bench", "the plots' folder, relative to the report's")
	writtenBy := flag.String("written-by", "make bench", "the command the report says writes it")
	only := flag.String("only", "", "comma-separated workloads to run (default: all): "+strings.Join(workloads, ","))
	reconnectClients := flag.Int("reconnect-clients", 1, "lockstep clients of one address in each reconnect pair's process (the report's P6 rows are defined for 1)")
	reconnectBackoffMax := flag.Duration("reconnect-backoff-max", 0, "the lockstep clients' Backoff.Max in the reconnect workload (default: the framework's)")
	serve := flag.String("serve", "", "internal: serve this kind of server (lockstep, grpc) as a workload's server process")
	addr := flag.String("addr", "", "internal: the address -serve listens on (or, for the client kinds, calls)")
	n := flag.Int("n", 0, "internal: how many sessions or watchers the client kinds of -serve hold")
	tlsDir := flag.String("tls", "", "internal: the folder of the mutual-TLS material -serve speaks with")
	flag.Parse()
	if *serve != "" {
		if err := suite.ServeChild(*serve, *addr, *n, *tlsDir, os.Stdin, os.Stdout); err != nil {
			fail(err)
		}
		return
	}

	started := time.Now()
	// The commit is read now: the tree may move during a run of minutes,
	// and the report names the code it measured.
	measured := commit()
	// No temporary folder outlives a run: an interrupted one removes its
	// own, and the folders of runs that were killed outright go now.
	scratch.RemoveOnSignal(os.Stderr)
	stale, err := scratch.SweepStale("")
	for _, dir := range stale {
		fmt.Fprintf(os.Stderr, "lockstep-bench: removed %s, left by a run that is gone\n", dir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockstep-bench: removing the folders of runs that are gone: %v\n", err)
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	s := suite.New(suite.Config{Quick: *quick, Rounds: *rounds, Self: self, Log: os.Stderr, ReconnectClients: *reconnectClients,
		ReconnectBackoffMax: *reconnectBackoffMax})
	run := map[string]func() error{
		"unary":      s.Unary,
		"validation": s.Validation,
		"reconnect":  s.Reconnect,
		"crash":      s.Crash,
		"heartbeats": s.Heartbeats,
		"fanout":     s.Fanout,
		"selectors":  s.Selectors,
	}
	selected := workloads
	if *only != "" {
		selected = strings.Split(*only, ",")
	}
	for _, name := range selected {
		fn, ok := run[name]
		if !ok {
			fail(fmt.Errorf("no workload %q (have %s)", name, strings.Join(workloads, ", ")))
		}
		began := time.Now()
		err := fn()
		wall := time.Since(began)
		s.Results.Walls = append(s.Results.Walls, results.Wall{Workload: name, Time: wall})
		fmt.Fprintf(os.Stderr, "lockstep-bench: %s took %s\n", name, wall.Round(100*time.Millisecond))
		if err != nil {
			// The report is still written: the other workloads' figures
			// stand, and the failure is in it.
			fmt.Fprintf(os.Stderr, "lockstep-bench: %s: %v\n", name, err)
			s.Results.Failures[name] = err.Error()
		}
	}
	// The report links to the other docs from wherever it is written.
	docs, err := filepath.Rel(filepath.Dir(*out), "../docs")
	if err != nil {
		docs = "."
	}
	w := s.Write(facts(started, measured), *plots, results.Run{WrittenBy: *writtenBy, Docs: filepath.ToSlash(docs)})
	dir := filepath.Join(filepath.Dir(*out), *plots)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	for name, svg := range w.Plots {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(svg), 0o644); err != nil {
			fail(err)
		}
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, w.Doc); err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %d plots in %s (%.0f s)\n", *out, len(w.Plots), dir, time.Since(started).Seconds())
	if len(s.Results.Failures) > 0 {
		os.Exit(1)
	}
}

// workloads are the suite's workloads in the order they run.
var workloads = []string{"unary", "fanout", "selectors", "heartbeats", "reconnect", "crash", "validation"}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "lockstep-bench:", err)
	os.Exit(1)
}

// facts are the machine and run facts the report starts with; measured
// is the commit read when the run started.
func facts(started time.Time, measured string) [][2]string {
	return [][2]string{
		{"date", started.UTC().Format("2006-01-02 15:04 UTC")},
		{"commit", measured},
		{"machine", machine()},
		{"Go", runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH},
		{"wall time of the run", time.Since(started).Round(time.Second).String()},
	}
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	mem := ""
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(raw), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB memory", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%d cores (%s)%s", runtime.NumCPU(), model, mem)
}
