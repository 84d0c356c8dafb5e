package codegen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
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
	dirs := goldenContracts(t)
	if len(dirs) < 10 {
		t.Fatalf("found only %d golden cases", len(dirs))
	}
	for _, c := range dirs {
		dir := filepath.Dir(c)
		t.Run(strings.TrimPrefix(filepath.ToSlash(dir), "internal/golden/"), func(t *testing.T) {
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

// TestModelGolden builds the model of every golden case with every
// decision made (types, presence, validator coverage, conversions) and
// compares its JSON with gomodel/testdata/<case>.json: the model is tested
// without rendering a file. With -update it rewrites them.
func TestModelGolden(t *testing.T) {
	t.Parallel()
	want := map[string]bool{}
	for _, c := range goldenContracts(t) {
		dir := filepath.Dir(c)
		name := strings.ReplaceAll(strings.TrimPrefix(filepath.ToSlash(dir), "internal/golden/"), "/", "-")
		golden := filepath.Join("gomodel", "testdata", name+".json")
		want[golden] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pkg, err := Model(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(pkg, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			old, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v: run go test ./codegen -run TestModelGolden -update", err)
			}
			if !bytes.Equal(old, got) {
				t.Errorf("%s is stale: run go test ./codegen -run TestModelGolden -update\n%s", golden, firstDifference(old, got))
			}
		})
	}
	files, err := filepath.Glob("gomodel/testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !want[f] && !*update {
			t.Errorf("%s belongs to no golden case", f)
		}
	}
}

// goldenContracts returns the contract files of the golden cases: one per
// case folder, or one per version folder of a fork case (forklossy/v1).
func goldenContracts(t *testing.T) []string {
	t.Helper()
	var all []string
	for _, pattern := range []string{"internal/golden/*/contract.*", "internal/golden/*/*/contract.*"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, found...)
	}
	return all
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
		"escapehatch/Escapes": "x-go-type netip.Addr",
		// Raw JSON for a construct Go cannot express exactly: jsonschema/v5
		// validates these messages.
		"mixedpatterns/Open": "object keywords on raw JSON",
		"oneofandanyof/Msg":  "minimum on json.RawMessage",
		// A union whose variants are unions of their own: the union's
		// schema applies to each variant's value.
		"oneoftagged/Merge": "a schema other than its own applies to the union",
		// One keyword each that generated checks cannot check on the Go
		// value it applies to.
		"uncovered/Floats":        "minimum on float32",
		"uncovered/Times":         "maxLength on a date-time held as time.Time",
		"uncovered/UniqueObjects": "uniqueItems on items of type UniqueObjectsLabelsItem",
		"uncovered/Pair":          "uniqueItems on a tuple",
		"uncovered/ObjectEnum":    "enum with object or array values",
		"uncovered/Unevaluated":   "unevaluatedProperties is not checked",
		// A fork's message without a generated Validate: its conversions
		// written by hand are checked against its schema instead.
		"forklossy/v1/Tags": "uniqueItems on items of type TagsTagsItem",
		"forklossy/v2/Tags": "uniqueItems on items of type TagsTagsItem",
	}
	seen := 0
	for _, c := range goldenContracts(t) {
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
		if err := gogen.Decide(pkg); err != nil {
			t.Fatal(err)
		}
		for msg, why := range pkg.Coverage() {
			key := strings.TrimPrefix(filepath.ToSlash(dir), "internal/golden/") + "/" + msg
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

// TestHandWrittenConversionsAreRequired builds the lossy fork case without
// its hand-written conversions: the package must not compile, and the
// compiler must name exactly the functions left to write.
func TestHandWrittenConversionsAreRequired(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("internal/golden/forklossy/v2")
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	spec, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(dir, "convert.go"): ""}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "build", "-overlay", overlay, "./internal/golden/forklossy/v2").CombinedOutput()
	if err == nil {
		t.Fatal("the package compiled without its hand-written conversions")
	}
	for _, name := range []string{"convert_v1_Status_To_v2_Status", "convert_v2_Status_To_v1_Status",
		"convert_v2_Ack_To_v1_Ack", "convert_v1_Ack_To_v2_Ack"} {
		if !strings.Contains(string(out), "undefined: "+name) {
			t.Errorf("the compiler does not ask for %s:\n%s", name, out)
		}
	}
	if strings.Contains(string(out), "Address") {
		t.Errorf("the compatible Address conversions must be generated:\n%s", out)
	}
}
