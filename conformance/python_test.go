package conformance_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/handshake"
)

// python3 returns the interpreter the Python peer runs on. make test
// installs python3 when it is missing, so a missing one is a failure, not a
// skip.
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for the Python peer (make test installs it): %v", err)
	}
	return p
}

// TestPythonFingerprints shows that the Python peer computes, from the
// files alone, the fingerprint of every vector and of every sample
// contract exactly as the Go implementation does.
func TestPythonFingerprints(t *testing.T) {
	dirs := vectorDirs(t)
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
	t.Logf("%d vectors and %d sample contracts agree", len(dirs), len(sampleDirs))
}
