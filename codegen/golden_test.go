package codegen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gogen"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

var update = flag.Bool("update", false, "rewrite the golden files from the generator's output")

// TestGolden regenerates every case under internal/golden and fails when
// the committed files differ: the committed output must be what the
// generator writes now. With -update it rewrites them.
func TestGolden(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("internal/golden/*/contract.*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d golden cases", len(dirs))
	}
	for _, c := range dirs {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			files, err := Generate(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				p := filepath.Join(dir, f.Name)
				if *update {
					if err := os.WriteFile(p, f.Content, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				old, err := os.ReadFile(p)
				if err != nil {
					t.Fatalf("%v: run go test ./codegen -run TestGolden -update", err)
				}
				if !bytes.Equal(old, f.Content) {
					t.Errorf("%s is stale: run go test ./codegen -run TestGolden -update\n%s", p, firstDifference(old, f.Content))
				}
			}
		})
	}
}

// TestRefused runs the generator on contracts it must refuse and compares
// the error with the case's error.golden.
func TestRefused(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("testdata/refused/*/contract.*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no refused cases")
	}
	for _, c := range dirs {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			_, err := Generate(dir)
			if err == nil {
				t.Fatal("the generator accepted a contract it must refuse")
			}
			got := err.Error() + "\n"
			p := filepath.Join(dir, "error.golden")
			if *update {
				if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestStale reports a golden file edited by hand as stale.
func TestStale(t *testing.T) {
	t.Parallel()
	src := "internal/golden/presence"
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == gogen.TypesFile {
			b = append(b, []byte("\n// edited\n")...)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := Stale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 1 || !strings.HasSuffix(stale[0], gogen.TypesFile) {
		t.Errorf("Stale = %v, want only %s", stale, gogen.TypesFile)
	}
	if err := os.Remove(filepath.Join(dir, gogen.APIFile)); err != nil {
		t.Fatal(err)
	}
	if stale, _ := Stale(dir); len(stale) != 2 {
		t.Errorf("with a generated file missing, Stale = %v", stale)
	}
}

// firstDifference shows the first line where two files differ.
func firstDifference(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + x + "\n  generated: " + y
		}
	}
	return ""
}

// TestValidatorCoverage pins which golden messages get a generated
// Validate: all but those whose schemas use what generated checks leave to
// jsonschema/v5, each for the reason given.
func TestValidatorCoverage(t *testing.T) {
	t.Parallel()
	uncovered := map[string]string{
		"booleanschemas/Anything": "raw JSON",
		"escapehatch/Escapes":     "x-go-type netip.Addr",
	}
	dirs, err := filepath.Glob("internal/golden/*/contract.*")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, c := range dirs {
		dir := filepath.Dir(c)
		ct, err := contract.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		name, err := PackageName(dir)
		if err != nil {
			t.Fatal(err)
		}
		pkg, err := gomodel.Build(ct, name)
		if err != nil {
			t.Fatal(err)
		}
		for msg, why := range gogen.Coverage(pkg) {
			key := filepath.Base(dir) + "/" + msg
			want, expected := uncovered[key]
			switch {
			case expected && len(why) == 0:
				t.Errorf("%s got a generated Validate, but its schema has %s", key, want)
			case expected && !strings.Contains(why[0], want):
				t.Errorf("%s: not covered because %q, want a reason naming %s", key, why, want)
			case !expected && len(why) > 0:
				t.Errorf("%s has no generated Validate: %v", key, why)
			}
			if expected {
				seen++
			}
		}
	}
	if seen != len(uncovered) {
		t.Errorf("found %d of the %d uncovered messages", seen, len(uncovered))
	}
}
