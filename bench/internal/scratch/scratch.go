// Package scratch makes the suite's temporary folders (embedded etcd's
// data, the mutual-TLS material) and makes sure none outlives its run:
// each is removed when its user is done with it, all are removed when
// the suite is interrupted (SIGINT, SIGTERM), and a run starts by removing
// those a dead run left behind (killed with SIGKILL, or before this
// package existed nothing removed them on a signal).
//
// A folder's name carries the process id of the run that made it
// (lockstep-bench-<kind>-<pid>-<random>), so the sweep at start removes
// only the folders of runs whose process is gone: a run in progress, this
// one or another user's on the same machine, keeps its own. Folders named
// before names carried a process id go once they are older than any run
// lasts.
package scratch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// prefix begins every folder's name.
const prefix = "lockstep-bench-"

// made holds the folders this process made and has not removed.
var made = struct {
	sync.Mutex
	dirs map[string]struct{}
}{dirs: map[string]struct{}{}}

// Dir makes a new folder for kind ("etcd", "tls") in the system's
// temporary folder, to be removed with [Remove].
func Dir(kind string) (string, error) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%s-%d-", prefix, kind, os.Getpid()))
	if err != nil {
		return "", err
	}
	made.Lock()
	made.dirs[dir] = struct{}{}
	made.Unlock()
	return dir, nil
}

// Remove removes a folder Dir made.
func Remove(dir string) error {
	made.Lock()
	delete(made.dirs, dir)
	made.Unlock()
	return os.RemoveAll(dir)
}

// RemoveAll removes every folder this process made and has not removed,
// and returns how many there were.
func RemoveAll() (int, error) {
	made.Lock()
	defer made.Unlock()
	var errs []error
	n := len(made.dirs)
	for dir := range made.dirs {
		errs = append(errs, os.RemoveAll(dir))
		delete(made.dirs, dir)
	}
	return n, errors.Join(errs...)
}

// RemoveOnSignal removes every folder this process made when it receives
// SIGINT or SIGTERM, says so on log, and exits with 128 plus the signal's
// number, as a shell reports a process a signal ended. The servers the
// process runs die with it; its server processes are its children, whose
// stdin closes with it (suite's child servers exit then).
func RemoveOnSignal(log io.Writer) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		n, err := RemoveAll()
		fmt.Fprintf(log, "lockstep-bench: %v: removed %d temporary folder(s)", sig, n)
		if err != nil {
			fmt.Fprintf(log, " (%v)", err)
		}
		fmt.Fprintln(log)
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()
}

// legacyAge is how old a folder without a process id in its name (made
// before names carried one) must be to be taken for a dead run's: every
// run, bounded in each workload, ends well within it.
const legacyAge = 2 * time.Hour

// SweepStale removes, in root (the system's temporary folder when
// empty), the folders of runs whose process no longer exists, and
// returns their paths. A folder named before names carried a process id
// is removed once it is older than legacyAge.
func SweepStale(root string) ([]string, error) {
	if root == "" {
		root = os.TempDir()
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !stale(e) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// stale reports whether the folder e is a dead run's.
func stale(e os.DirEntry) bool {
	if pid, ok := ownerOf(e.Name()); ok {
		return !alive(pid)
	}
	if !strings.HasPrefix(e.Name(), prefix) {
		return false
	}
	info, err := e.Info()
	return err == nil && time.Since(info.ModTime()) > legacyAge
}

// ownerOf returns the process id in a folder name Dir made.
func ownerOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	// <kind>-<pid>-<random>: kind has no '-'.
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// alive reports whether a process with pid exists. A process of another
// user answers EPERM: it exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
