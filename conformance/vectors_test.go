package conformance_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/handshake"
)

var update = flag.Bool("update", false, "rewrite canonical.json and fingerprint of every vector from the Go implementation")

// vectorDirs lists the fingerprint vectors: every folder of vectors/ that
// holds a contract file.
func vectorDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("vectors")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join("vectors", e.Name())
		if _, err := contract.Find(dir); err == nil {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) < 20 {
		t.Fatalf("only %d fingerprint vectors in vectors/; the protocol promises at least 20", len(dirs))
	}
	return dirs
}

// refusedVector reports whether the vector in dir is one a peer must
// refuse: it holds a file "refused" (saying what is refused) instead of
// canonical.json and fingerprint.
func refusedVector(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "refused"))
	if os.IsNotExist(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(b)) == "" {
		t.Fatalf("%s/refused says nothing of what is refused", dir)
	}
	return true
}

// TestVectors checks the Go implementation against every language-neutral
// fingerprint vector: the contract file as a peer is given it, loaded the
// way lockstep-gen loads it, must produce exactly the vector's canonical
// bytes and fingerprint, or, for a vector with a "refused" file, be
// refused. With -update it writes the bytes and fingerprint instead; a
// change to an existing vector is a change of the "lsfp1" algorithm and
// needs a new prefix, not an update.
func TestVectors(t *testing.T) {
	for _, dir := range vectorDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if refusedVector(t, dir) {
				for _, f := range []string{"canonical.json", "fingerprint"} {
					if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
						t.Fatalf("a refused vector has a %s", f)
					}
				}
				c, err := contract.Load(dir)
				if err == nil {
					wire := c.Handshake()
					fp, ferr := handshake.Fingerprint(&wire)
					t.Fatalf("the vector's contract is refused by the protocol, yet it loads (fingerprint %s, %v)", fp, ferr)
				}
				t.Logf("refused: %v", err)
				return
			}
			c, err := contract.Load(dir)
			if err != nil {
				t.Fatalf("loading the vector's contract: %v", err)
			}
			wire := c.Handshake()
			canonical, err := handshake.Canonical(&wire)
			if err != nil {
				t.Fatal(err)
			}
			fp, err := handshake.Fingerprint(&wire)
			if err != nil {
				t.Fatal(err)
			}
			canonicalFile := filepath.Join(dir, "canonical.json")
			fpFile := filepath.Join(dir, "fingerprint")
			if *update {
				if err := os.WriteFile(canonicalFile, canonical, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(fpFile, []byte(fp+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCanonical, err := os.ReadFile(canonicalFile)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(canonical, wantCanonical) {
				t.Errorf("canonical form differs from %s:\n got %s\nwant %s", canonicalFile, canonical, wantCanonical)
			}
			wantFP, err := os.ReadFile(fpFile)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fp, strings.TrimSpace(string(wantFP)); got != want {
				t.Errorf("fingerprint %s, the vector says %s", got, want)
			}
		})
	}
}
