package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Attacks 9 and 10 turn the tables: a hostile server, and the operator's
// lockstepctl reading it. What is measured is lockstepctl's own process:
// its peak RSS (rusage), how long each run took (the operator's p99), its
// exit code, and what reached the terminal.

// What a hostile server puts in the strings it sends: a clipboard write
// (OSC 52), a title change, colours by C1 CSI, a cursor move and a line
// erase, a forged line.
const hostileName = "nc\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;owned\x07\u009b31m\x1b[2K\x1b[1A\nFORGED LINE\tx"

// hostileStatus is a status JSON whose strings are hostileName, with
// watchers watchers of one topic, each selecting selection.
func hostileStatus(watchers int, selection string) []byte {
	w := make([]map[string]any, watchers)
	for i := range w {
		w[i] = map[string]any{"peer": map[string]any{"component": hostileName, "instance": hostileName}, "selection": selection}
	}
	st := map[string]any{
		"component": hostileName, "instance": hostileName, "release": hostileName, "ready": false, "notReady": hostileName,
		"now":       time.Now().Format(time.RFC3339),
		"contracts": map[string][]string{hostileName: {hostileName}},
		"served":    []map[string]any{{"contract": hostileName, "version": hostileName, "fingerprint": hostileName, "client": hostileName}},
		"sessions": []map[string]any{{"peer": map[string]any{"component": hostileName, "instance": hostileName, "release": hostileName},
			"contract": hostileName, "version": hostileName, "state": hostileName}},
		"topics": []map[string]any{{"contract": hostileName, "version": hostileName, "topic": hostileName, "watchers": w}},
	}
	b, err := json.Marshal(st)
	check(err)
	return b
}

// hostileServer serves h on 127.0.0.1 until stop is called.
func hostileServer(h http.HandlerFunc) (url string, stop func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(l) }()
	return "http://" + l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		_ = hs.Close()
	}
}

// ctlRun is one run of lockstepctl.
type ctlRun struct {
	code   int
	took   time.Duration
	rss    uint64 // peak, bytes
	stdout []byte
	stderr string
}

// ctl runs lockstepctl with args for at most limit, killed if its RSS
// passes capMiB (so that an unbounded build cannot take the machine; the
// run then says so); signal, when set, is sent after signalAfter.
func (w *world) ctl(capMiB int, limit time.Duration, signal syscall.Signal, signalAfter time.Duration, args ...string) ctlRun {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.ctlBin, args...)
	var stdout bytes.Buffer
	var stderr bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: 64 << 20}
	cmd.Stderr = &limitedWriter{w: &stderr, n: 1 << 20}
	start := time.Now()
	check(cmd.Start())
	if signal != 0 {
		go func() {
			time.Sleep(signalAfter)
			_ = cmd.Process.Signal(signal)
		}()
	}
	// The peak is the kernel's high-water mark, read every 5 ms while it
	// runs: the rusage of a child started by vfork and exec counts the
	// parent's resident set too.
	var capped atomic.Bool
	var peak atomic.Uint64
	exited, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-exited:
				return
			case <-tick.C:
				peak.Store(max(peak.Load(), peakRSSOf(cmd.Process.Pid)))
				if rssOf(cmd.Process.Pid) > uint64(capMiB)<<20 {
					capped.Store(true)
					_ = cmd.Process.Kill()
					return
				}
			}
		}
	}()
	_ = cmd.Wait()
	close(exited)
	<-sampled
	r := ctlRun{took: time.Since(start), stdout: stdout.Bytes(), stderr: clip(strings.TrimSpace(stderr.String())), rss: peak.Load()}
	if capped.Load() {
		r.stderr = fmt.Sprintf("killed at the %d MiB RSS cap after %s; ", capMiB, r.took.Round(time.Millisecond)) + r.stderr
	}
	if st := cmd.ProcessState; st != nil {
		r.code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	}
	return r
}

// limitedWriter keeps the first n bytes written to it and counts the rest.
type limitedWriter struct {
	w       io.Writer
	n       int
	dropped int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	keep := min(len(p), l.n)
	_, _ = l.w.Write(p[:keep])
	l.n -= keep
	l.dropped += len(p) - keep
	return len(p), nil
}

// unsafeBytes counts what a terminal would act on in out: ESC, C1
// controls and other control characters but newline and tab.
func unsafeBytes(out []byte) int {
	n := 0
	for _, r := range string(out) {
		if r == 0x1b || r == 0x07 || (r >= 0x80 && r <= 0x9f) || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			n++
		}
	}
	return n
}

// runsResult fills r's operator figures from runs: peak RSS, p99 of the
// runs' times, and runs that failed (failed says which).
func runsResult(r *result, runs []ctlRun, failed func(ctlRun) bool) {
	var took []time.Duration
	for _, run := range runs {
		r.rss = max(r.rss, run.rss)
		took = append(took, run.took)
		if failed(run) {
			r.errs++
			if r.firstErr == "" {
				r.firstErr = fmt.Sprintf("exit %d: %s", run.code, run.stderr)
			}
		}
	}
	slices.Sort(took)
	r.calls = len(took)
	if len(took) > 0 {
		r.p99 = took[len(took)*99/100]
	}
}

// attackTerminal: a hostile server's strings carry terminal escapes (a
// clipboard write, a title change, colours, a cursor move, a forged
// line); the operator runs lockstepctl status, as a table, JSON and YAML.
func attackTerminal(w *world, sz sizes) result {
	status := hostileStatus(3, "node="+hostileName)
	url, stop := hostileServer(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write(status)
	})
	defer stop()
	r := result{subject: "lockstepctl", name: "a hostile server's status strings carry terminal escapes (OSC 52 clipboard write, title, C1 CSI, cursor moves, a forged line); lockstepctl status as a table, -o json and -o yaml"}
	var runs []ctlRun
	for i := range sz.ctlRuns {
		args := [][]string{{"status", url}, {"status", "-o", "json", url}, {"status", "-o", "yaml", url}}[i%3]
		runs = append(runs, w.ctl(1024, 60*time.Second, 0, 0, args...))
	}
	escapes, forged := 0, 0
	for _, run := range runs {
		escapes += unsafeBytes(run.stdout)
		if bytes.Contains(run.stdout, []byte("\nFORGED LINE")) {
			forged++
		}
	}
	runsResult(&r, runs, func(run ctlRun) bool { return run.code != 0 })
	r.notes = append(r.notes, fmt.Sprintf("%d runs: %d bytes a terminal acts on reached stdout; a forged line started %d times", len(runs), escapes, forged))
	return r
}

// attackHugeStatus: a hostile server answers a status of about 60 MiB (3,700
// watchers with 16 KB selections), and another trickles one byte every
// 10 ms for good; the operator runs lockstepctl status -o yaml on the
// first, and on the second stops it with SIGTERM after a second.
func attackHugeStatus(w *world, sz sizes) result {
	huge := hostileStatus(3700, "node="+strings.Repeat("x", 16<<10))
	url, stop := hostileServer(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/trickle") {
			_, _ = io.WriteString(rw, `{"component":"`)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
					if _, err := io.WriteString(rw, "x"); err != nil {
						return
					}
					rw.(http.Flusher).Flush()
				}
			}
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write(huge)
	})
	defer stop()
	const capMiB = 4096
	r := result{subject: "lockstepctl", name: fmt.Sprintf("lockstepctl status -o yaml of a %d MiB status (3,700 watchers with 16 KB selections), killed at %d MiB RSS; and of a status trickled for good, stopped by SIGTERM after 1 s", len(huge)>>20, capMiB)}
	var runs []ctlRun
	for range sz.ctlRuns / 3 {
		runs = append(runs, w.ctl(capMiB, 120*time.Second, 0, 0, "status", "-o", "yaml", url))
	}
	codes := map[int]int{}
	printed := 0
	for _, run := range runs {
		codes[run.code]++
		printed = max(printed, len(run.stdout))
	}
	// A run fails the operator when it is killed at the cap, or prints
	// more than lockstepctl's bound on an answer (--max-bytes, 16 MiB by
	// default) to the terminal.
	runsResult(&r, runs, func(run ctlRun) bool {
		return len(run.stdout) > 16<<20 || strings.Contains(run.stderr, "killed at the")
	})
	r.notes = append(r.notes, fmt.Sprintf("huge status: exit codes %v; most printed %d bytes; first error: %s", codes, printed, clip(runs[0].stderr)))
	term := w.ctl(1024, 60*time.Second, syscall.SIGTERM, time.Second, "status", "-o", "yaml", url+"/trickle")
	r.rss = max(r.rss, term.rss)
	r.notes = append(r.notes, fmt.Sprintf("trickled status, SIGTERM after 1 s: exit %d after %s (%s)", term.code, term.took.Round(time.Millisecond), clip(term.stderr)))
	return r
}
