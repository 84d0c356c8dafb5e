package scratch

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary a run that makes two folders, removes
// them on a signal, prints their paths and waits for its input to close.
const childEnv = "LOCKSTEP_SCRATCH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		RemoveOnSignal(os.Stderr)
		for _, kind := range []string{"etcd", "tls"} {
			dir, err := Dir(kind)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o600); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			fmt.Println(dir)
		}
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A run interrupted with SIGINT or SIGTERM removes the folders it made,
// and exits as a signal's end is reported (128 + the signal).
func TestAnInterruptedRunRemovesItsFolders(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+tmp)
			cmd.Stderr = os.Stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			r := bufio.NewReader(out)
			var dirs []string
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("the run did not start: %v", err)
				}
				line = strings.TrimSpace(line)
				if line == "ready" {
					break
				}
				dirs = append(dirs, line)
			}
			if len(dirs) != 2 {
				t.Fatalf("the run made %v, want two folders", dirs)
			}
			for _, d := range dirs {
				if filepath.Dir(d) != tmp {
					t.Fatalf("%s is not in the temporary folder %s", d, tmp)
				}
				if _, err := os.Stat(filepath.Join(d, "data")); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the run did not exit within 30 s of %v", sig)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Fatalf("the run ended with %v, want exit status %d", err, 128+int(sig))
			}
			for _, d := range dirs {
				if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s is still there after %v (%v)", d, sig, err)
				}
			}
		})
	}
}

// The sweep at a run's start removes the folders of runs whose process is
// gone, and only those: not the folders of a live run (this one), not a
// recent folder named before names carried a process id (an old one
// goes), not anything else.
func TestTheSweepRemovesTheFoldersOfDeadRunsOnly(t *testing.T) {
	root := t.TempDir()
	gone := exec.Command(os.Args[0], "-test.run=^$")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead, self := gone.Process.Pid, os.Getpid()
	mk := func(name string, dir bool) string {
		p := filepath.Join(root, name)
		var err error
		if dir {
			err = os.MkdirAll(filepath.Join(p, "member", "wal"), 0o700)
		} else {
			err = os.WriteFile(p, nil, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := []string{
		mk(fmt.Sprintf("lockstep-bench-etcd-%d-1234", dead), true),
		mk(fmt.Sprintf("lockstep-bench-tls-%d-99", dead), true),
	}
	old := mk("lockstep-bench-etcd-2718281", true) // no process id in its name, older than any run
	if err := os.Chtimes(old, time.Now().Add(-legacyAge-time.Minute), time.Now().Add(-legacyAge-time.Minute)); err != nil {
		t.Fatal(err)
	}
	stale = append(stale, old)
	kept := []string{
		mk(fmt.Sprintf("lockstep-bench-etcd-%d-5678", self), true), // a live run's
		mk("lockstep-bench-etcd-3141592", true),                    // no process id in its name, recent
		mk(fmt.Sprintf("lockstep-bench-tls-%d-7", dead), false),    // not a folder
		mk(fmt.Sprintf("other-%d-1", dead), true),
	}
	removed, err := SweepStale(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != len(stale) {
		t.Errorf("removed %v, want %v", removed, stale)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s of a dead run is still there (%v)", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// Remove and RemoveAll forget what they removed: a folder removed by its
// user is not counted again at a signal.
func TestRemoveAllRemovesWhatIsLeft(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	a, err := Dir("etcd")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Dir("tls")
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := ownerOf(filepath.Base(a)); !ok || pid != os.Getpid() {
		t.Fatalf("%s does not name this process (%d, %v)", a, pid, ok)
	}
	if err := Remove(a); err != nil {
		t.Fatal(err)
	}
	n, err := RemoveAll()
	if err != nil || n != 1 {
		t.Fatalf("RemoveAll = %d, %v; want 1 folder", n, err)
	}
	for _, d := range []string{a, b} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", d, err)
		}
	}
}
