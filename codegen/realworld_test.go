package codegen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/gogen"
)

// TestRealWorld generates every schema of the real-world corpus (public
// schemas with the instances their projects ship; see the README there),
// which lives beside the repository in ../shared/realworld/ (third-party
// data is not kept in the project; [sharedDir]), as
// its own one-message contract, builds them all in one temporary module
// into one test binary, and runs it: for every instance it checks the
// round trip (decode, encode, the same JSON: absent stays absent, null
// stays null, unknown members are kept) and compares the generated
// Validate with jsonschema/v5 on the instance and on mutants of it
// (difftest). It fails on any schema that does not generate or
// compile, any instance that does not round-trip, and any disagreement.
//
// It is one of make test's longest tests, so each step is the cheapest that
// checks the same: lockstep-gen generates every package in one run, built
// without the race detector (make test's check-generated has built it
// already; under -race, generating the corpus in this process takes seven
// times as long); one `go test -c` builds every generated package and the
// check, without vet (the check is a list of calls, and vet's facts for the
// generated packages would cost a second pass over them) and without
// optimising them ([corpusBuildFlags]), in a folder
// that stays the same from run to run so that the build cache serves a
// rerun ([corpusModuleDir]); the binary runs the cases in parallel. Each
// step's time is logged.
//
// LOCKSTEP_REALWORLD_CORPUS names another folder of the same layout to
// check instead (one folder per schema, with schema.json and
// instance-*.json), e.g. a holdout set of schemas the generator was never
// fixed against; it gets a module folder of its own.
func TestRealWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of generated packages")
	}
	t.Parallel()
	corpusDir, minSchemas := sharedDir(t, "realworld"), 60
	if dir := os.Getenv("LOCKSTEP_REALWORLD_CORPUS"); dir != "" {
		corpusDir, minSchemas = dir, 1
	}
	schemas, err := filepath.Glob(filepath.Join(corpusDir, "*", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) < minSchemas {
		t.Fatalf("found only %d real-world schemas", len(schemas))
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := corpusModuleDir(t, root, "realworld", corpusDir)
	writeCorpusModule(t, root, tmp, corpusModule)

	start := time.Now()
	var all []corpusCase
	for i, s := range schemas {
		c := corpusCase{Name: filepath.Base(filepath.Dir(s)), Pkg: fmt.Sprintf("p%03d", i)}
		c.Source, _ = filepath.Abs(filepath.Dir(s))
		if err := writeCorpusContract(tmp, c, s); err != nil {
			t.Fatal(err)
		}
		all = append(all, c)
	}
	cases, genCPU := generateCorpus(t, root, tmp, all)
	t.Logf("real-world corpus: %d/%d schemas generate (%v, %v of CPU)", len(cases), len(schemas), time.Since(start).Round(time.Millisecond), genCPU.Round(time.Millisecond))
	writeCorpusCheck(t, tmp, cases)

	start = time.Now()
	// In the module's folder, so that go test -c does not link it again
	// when nothing changed.
	bin := filepath.Join(tmp, "check.test")
	build := exec.Command("go", append([]string{"test", "-c", "-vet=off", "-o", bin}, append(corpusBuildFlags, "./check")...)...)
	build.Dir = tmp
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the generated corpus does not build: %v\n%s", err, lastLines(out, 200))
	}
	t.Logf("real-world corpus: built in %v (%v of CPU)", time.Since(start).Round(time.Millisecond), cpuOf(build).Round(time.Millisecond))

	start = time.Now()
	cmd := exec.Command(bin, "-test.v", "-test.timeout=5m")
	cmd.Dir = filepath.Join(tmp, "check")
	out, err := cmd.CombinedOutput()
	t.Logf("real-world corpus: checked in %v (%v of CPU)", time.Since(start).Round(time.Millisecond), cpuOf(cmd).Round(time.Millisecond))
	summary := regexp.MustCompile(`(?m)^realworld: .*$`).FindAll(out, -1)
	for _, l := range summary {
		t.Log(string(l))
	}
	if err != nil {
		t.Fatalf("the generated corpus check fails: %v\n%s", err, lastLines(out, 200))
	}
	if len(summary) == 0 {
		t.Fatalf("the corpus check printed no summary:\n%s", lastLines(out, 50))
	}
}

// sharedDir returns the absolute path of name in the folder of
// third-party test data beside the repository's clone (../shared from its
// root, read-only in CI), failing t when it is not there: a corpus that
// cannot be read is a failure, not a skip.
func sharedDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "shared", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the test data %s is not beside the repository (../shared/%s from its root): %v", name, name, err)
	}
	return dir
}

// corpusBuildFlags are the flags of the corpus module's build beyond -c
// and -vet=off. The generated packages (156,000 lines, a fifth of them
// the Pod package) are compiled without optimisation, inlining and DWARF,
// and the test binary is linked without DWARF: the check runs each
// generated function a few dozen times, so the optimiser's work is never
// paid back, and nobody debugs the binary. This cuts the compile's CPU by
// about a third (docs/codegen-design.md). The dependencies (framework,
// jsonschema/v5, the standard library) keep the default flags, so the
// build shares them with make test's other builds without -race. What is
// checked does not change: optimisation does not change what Go code
// means.
var corpusBuildFlags = []string{
	"-gcflags=" + corpusModule + "/...=-N -l -dwarf=false",
	"-ldflags=-w",
}

// corpusModuleDir returns the folder of a temporary module named kind
// ("realworld", "jsts"), locked for this test until it ends. It is the same
// folder on every run from the same checkout (one under the system's
// temporary folder, named by kind and a hash of root and, for another
// corpus than the shared one, of its folder), because the build cache
// keys a package outside the module cache on its folder: in a new folder
// each run, the second run of make test would compile every generated
// package again, which is most of this test's time. For the real-world
// corpus, LOCKSTEP_REALWORLD_MODULE names another folder, e.g. to inspect
// the module and rebuild it by hand.
func corpusModuleDir(t *testing.T, root, kind, corpusDir string) string {
	t.Helper()
	dir := ""
	if kind == "realworld" {
		dir = os.Getenv("LOCKSTEP_REALWORLD_MODULE")
	}
	if dir == "" {
		key := root
		if kind == "realworld" && os.Getenv("LOCKSTEP_REALWORLD_CORPUS") != "" {
			key += "\x00" + corpusDir
		}
		sum := sha256.Sum256([]byte(key))
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("lockstep-%s-%x", kind, sum[:6]))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lockCorpusModule(t, dir)
	return dir
}

// corpusCase is one schema of the corpus and the package generated from it.
type corpusCase struct {
	Name, Pkg, Source string
}

// corpusModule is the module path of the real-world corpus's temporary
// module.
const corpusModule = "github.com/lockstep-dev/lockstep/codegen/realworldcheck"

// writeCorpusModule writes a temporary module named module: it requires
// this module through a replace directive, and has a path under codegen/ so
// that its test may import codegen's internal test helpers.
func writeCorpusModule(t *testing.T, root, tmp, module string) {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(mod),
		"module "+module)
	text += fmt.Sprintf("\nrequire github.com/lockstep-dev/lockstep v0.0.0\n\nreplace github.com/lockstep-dev/lockstep => %s\n", root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"go.mod": text, "go.sum": string(sum)} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeCorpusContract writes a one-message contract around schema into its
// own folder of the temporary module.
func writeCorpusContract(tmp string, c corpusCase, schema string) error {
	dir := filepath.Join(tmp, c.Pkg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := os.ReadFile(schema)
	if err != nil {
		return err
	}
	contract := `contract: realworld
version: "1.0.0"
server: server
client: client
methods:
  Check:
    request: Doc
    response: Doc
schemas:
  Doc: {$ref: schema.json}
`
	files := map[string]string{
		"contract.yaml": contract,
		"schema.json":   string(data),
		"doc.go":        "// Package " + c.Pkg + " is generated from " + c.Name + ".\npackage " + c.Pkg + "\n\n" + newDocFunc,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cpuOf is the CPU time a finished command and the processes it waited for
// used (the go command's compiles and links included), which is what the
// test costs a make test that keeps both cores busy, whatever its wall time
// there.
func cpuOf(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// newDocFunc is the one function the corpus check calls in each generated
// package besides its Contract, so that the check never names a generated
// type: the compiler instantiates, in every package that refers to a type,
// the methods of each generic type the type's members use (the corpus's
// jsonwire.Nullable members, some 14,000 functions), so a check naming the
// 65 Doc types compiled them all a second time.
const newDocFunc = "// NewDoc returns a new Doc, for the corpus check.\nfunc NewDoc() any { return new(Doc) }\n"

// generateCorpus runs lockstep-gen, as go generate does, once on every
// case's folder, and returns the cases it generated. Each case that does
// not generate is an error of t with the lines lockstep-gen wrote about
// it (its errors name the schema's file).
func generateCorpus(t *testing.T, root, tmp string, cases []corpusCase) ([]corpusCase, time.Duration) {
	t.Helper()
	args := []string{"run", "github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen"}
	for _, c := range cases {
		dir := filepath.Join(tmp, c.Pkg)
		// A file an earlier run generated must not pass for this run's.
		for _, name := range []string{gogen.TypesFile, gogen.APIFile, gogen.ForkFile} {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		args = append(args, dir)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	// With several folders, lockstep-gen starts each error line with the
	// folder; other lines are warnings.
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	var generated []corpusCase
	for _, c := range cases {
		prefix := filepath.Join(tmp, c.Pkg) + ": "
		var errs []string
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				errs = append(errs, strings.TrimPrefix(l, prefix))
			}
		}
		_, statErr := os.Stat(filepath.Join(tmp, c.Pkg, gogen.TypesFile))
		switch {
		case len(errs) > 0:
			t.Errorf("%s does not generate: %s", c.Name, strings.Join(errs, "\n"))
		case statErr != nil:
			t.Errorf("%s does not generate: %v", c.Name, statErr)
		default:
			generated = append(generated, c)
		}
	}
	if runErr != nil && len(generated) == len(cases) {
		t.Fatalf("lockstep-gen: %v\n%s", runErr, stderr.String())
	}
	return generated, cpuOf(cmd)
}

// writeCorpusCheck writes the test that runs in the temporary module: the
// list of generated packages, checked by package corpus.
func writeCorpusCheck(t *testing.T, tmp string, cases []corpusCase) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("package check\n\nimport (\n\t\"testing\"\n\n\t\"github.com/lockstep-dev/lockstep/codegen/internal/golden/corpus\"\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "\t%s %q\n", c.Pkg, corpusModule+"/"+c.Pkg)
	}
	b.WriteString(")\n\nfunc TestCorpus(t *testing.T) {\n\tvar cases []corpus.Case\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "\t{\n\t\tdoc, rt := corpus.ForNew(%s.NewDoc)\n\t\tcases = append(cases, corpus.Case{Name: %q, Dir: %q, Contract: %s.Contract, Doc: doc, RoundTrip: rt})\n\t}\n",
			c.Pkg, c.Name, c.Source, c.Pkg)
	}
	b.WriteString("\tcorpus.Run(t, cases)\n}\n")
	dir := filepath.Join(tmp, "check")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check_test.go"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLines(out []byte, n int) string {
	var lines []string
	s := bufio.NewScanner(bytes.NewReader(out))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
