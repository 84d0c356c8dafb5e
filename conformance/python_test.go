package conformance_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/conformance"
	"github.com/lockstep-dev/lockstep/handshake"
)

// python3 returns the interpreter the Python peer runs on (the real one,
// not a version manager's shim in front of it). make test installs python3
// when it is missing, so a missing one is a failure, not a skip.
func python3(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			pythonErr = err
			return
		}
		out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			pythonPath = p
			return
		}
		pythonPath = strings.TrimSpace(string(out))
	})
	if pythonErr != nil {
		t.Fatalf("python3 is needed for the Python peer (make test installs it): %v", pythonErr)
	}
	return pythonPath
}

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)

// TestPythonFingerprints shows that the Python peer computes, from the
// files alone, the fingerprint of every vector and of every sample
// contract exactly as the Go implementation does.
func TestPythonFingerprints(t *testing.T) {
	var dirs, refused []string
	for _, d := range vectorDirs(t) {
		if refusedVector(t, d) {
			refused = append(refused, d)
		} else {
			dirs = append(dirs, d)
		}
	}
	if len(refused) == 0 {
		t.Fatal("no refused vectors")
	}
	for _, d := range refused {
		pythonRefuses(t, d)
	}
	samples, err := filepath.Glob(filepath.Join("..", "sample", "api", "*", "v*"))
	if err != nil {
		t.Fatal(err)
	}
	var sampleDirs []string
	for _, d := range samples {
		if _, err := contract.Find(d); err == nil {
			sampleDirs = append(sampleDirs, d)
		}
	}
	if len(sampleDirs) == 0 {
		t.Fatal("no sample contracts under ../sample/api")
	}
	want := map[string]string{}
	for _, d := range append(append([]string(nil), dirs...), sampleDirs...) {
		c, err := contract.Load(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		wire := c.Handshake()
		fp, err := handshake.Fingerprint(&wire)
		if err != nil {
			t.Fatal(err)
		}
		want[d] = fp
	}
	args := append([]string{"-m", "lockstep_peer.fingerprint"}, dirs...)
	args = append(args, sampleDirs...)
	cmd := exec.Command(python3(t), args...)
	cmd.Dir = "python"
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	// The peer runs in python/, so the paths it is given are relative to it.
	for i := 2; i < len(args); i++ {
		args[i] = filepath.Join("..", args[i])
	}
	cmd.Args = append([]string{cmd.Path}, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python peer: %v\n%s", err, stderr.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fp, path, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("unexpected output line %q", sc.Text())
		}
		got[strings.TrimPrefix(path, "../")] = fp
	}
	for d, fp := range want {
		if got[d] != fp {
			t.Errorf("%s: the Python peer computes %q, the Go implementation %s", d, got[d], fp)
		}
	}
	t.Logf("%d vectors and %d sample contracts agree; %d refused vectors are refused", len(dirs), len(sampleDirs), len(refused))
}

// pythonRefuses checks that the Python peer refuses the contract in dir
// (a vector with a "refused" file): it prints no fingerprint, an error
// naming the folder, and exits 1.
func pythonRefuses(t *testing.T, dir string) {
	t.Helper()
	rel := filepath.Join("..", dir) // the peer runs in python/
	cmd := exec.Command(python3(t), "-m", "lockstep_peer.fingerprint", rel)
	cmd.Dir = "python"
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "error "+rel+":") {
		t.Errorf("%s: the Python peer does not refuse it (%v): stdout %q, stderr %q", dir, err, stdout.String(), stderr.String())
		return
	}
	t.Logf("%s refused: %s", dir, strings.TrimSpace(stderr.String()))
}

// pythonEnv makes python3 find the Python peer and keeps it from writing
// bytecode into the tree.
func pythonEnv(t *testing.T) {
	t.Helper()
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", dir)
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
}

// TestPythonClientCases: the Python peer passes every client-side case.
func TestPythonClientCases(t *testing.T) {
	pythonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := conformance.CommandClient(python3(t), "-m", "lockstep_peer.conformance_client")
	results := conformance.RunClientCases(ctx, client, clientCases(t), conformance.DefaultVars(fingerprint(t)))
	requireAllPass(t, "the Python peer", results)
}

// TestPythonLive runs the Python peer against the framework's server of
// the conformance contract: it handshakes with the fingerprint it computed
// itself, calls (unary, batch, multi, a schema error), heartbeats, writes a
// client-written topic, watches both topics, and recovers a closed session.
func TestPythonLive(t *testing.T) {
	pythonEnv(t)
	ref := startReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := conformance.CommandClient(python3(t), "-m", "lockstep_peer.conformance_client")
	report, err := client(ctx, "tour", ref.URL)
	if err != nil {
		t.Fatalf("python tour: %v (report %v)", err, report)
	}
	if report["calls"] != "ok" || report["version"] != "1.0.0" || report["handshakes"] != float64(2) {
		t.Fatalf("python tour reported %v", report)
	}
	if items, _ := report["items"].([]any); len(items) != 1 || items[0] != "from-python" {
		t.Fatalf("the Python peer's watch of Items held %v", report["items"])
	}
	sessions := ref.Server.Sessions()
	if len(sessions) != 0 {
		t.Errorf("the Python peer left %d sessions open", len(sessions))
	}
	report, err = client(ctx, "call", ref.URL)
	if err != nil || report["ok"] == nil {
		t.Fatalf("python call: %v %v", err, report)
	}
}
