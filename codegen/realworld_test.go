package codegen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRealWorld generates every schema under testdata/realworld (public
// schemas with the instances their projects ship; see the README there) as
// its own one-message contract, builds them all in one temporary module,
// and runs there, without the race detector, a test that for every
// instance checks the round trip (decode, encode, the same JSON: absent
// stays absent, null stays null, unknown members are kept) and compares
// the generated Validate with jsonschema/v5 on the instance and on
// mutants of it (difftest). With LOCKSTEP_REALWORLD_MODULE set to a
// folder, the module is written there and kept. It fails on any schema that does not generate
// or compile, any instance that does not round-trip, and any disagreement.
func TestRealWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of generated packages")
	}
	t.Parallel()
	schemas, err := filepath.Glob("testdata/realworld/*/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) < 60 {
		t.Fatalf("found only %d real-world schemas", len(schemas))
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if keep := os.Getenv("LOCKSTEP_REALWORLD_MODULE"); keep != "" {
		// Write the module where it can be inspected and rebuilt by hand.
		tmp = keep
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeCorpusModule(t, root, tmp)

	var cases []corpusCase
	generated := 0
	for i, s := range schemas {
		c := corpusCase{Name: filepath.Base(filepath.Dir(s)), Pkg: fmt.Sprintf("p%03d", i)}
		c.Source, _ = filepath.Abs(filepath.Dir(s))
		if err := generateCorpusCase(tmp, c, s); err != nil {
			t.Errorf("%s does not generate: %v", c.Name, err)
			continue
		}
		generated++
		cases = append(cases, c)
	}
	t.Logf("real-world corpus: %d/%d schemas generate", generated, len(schemas))
	writeCorpusCheck(t, tmp, cases)

	cmd := exec.Command("go", "test", "-v", "-count=1", "-timeout=5m", "./check")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	summary := regexp.MustCompile(`(?m)^realworld: .*$`).FindAll(out, -1)
	for _, l := range summary {
		t.Log(string(l))
	}
	if err != nil {
		t.Fatalf("the generated corpus does not build or its check fails: %v\n%s", err, lastLines(out, 200))
	}
	if len(summary) == 0 {
		t.Fatalf("the corpus check printed no summary:\n%s", lastLines(out, 50))
	}
}

// corpusCase is one schema of the corpus and the package generated from it.
type corpusCase struct {
	Name, Pkg, Source string
}

// writeCorpusModule writes the temporary module: it requires this module
// through a replace directive, and has a path under codegen/ so that its
// test may import codegen's internal test helpers.
func writeCorpusModule(t *testing.T, root, tmp string) {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(mod),
		"module github.com/lockstep-dev/lockstep/codegen/realworldcheck")
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

// generateCorpusCase writes a one-message contract around schema into its
// own folder of the temporary module and generates its package there.
func generateCorpusCase(tmp string, c corpusCase, schema string) error {
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
		"doc.go":        "// Package " + c.Pkg + " is generated from " + c.Name + ".\npackage " + c.Pkg + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	out, err := Generate(dir)
	if err != nil {
		return err
	}
	for _, f := range out {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeCorpusCheck writes the test that runs in the temporary module: the
// list of generated packages, checked by package corpus.
func writeCorpusCheck(t *testing.T, tmp string, cases []corpusCase) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("package check\n\nimport (\n\t\"testing\"\n\n\t\"github.com/lockstep-dev/lockstep/codegen/internal/golden/corpus\"\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "\t%s %q\n", c.Pkg, "github.com/lockstep-dev/lockstep/codegen/realworldcheck/"+c.Pkg)
	}
	b.WriteString(")\n\nfunc TestCorpus(t *testing.T) {\n\tvar cases []corpus.Case\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "\t{\n\t\tdoc, rt := corpus.For[%s.Doc]()\n\t\tcases = append(cases, corpus.Case{Name: %q, Dir: %q, Contract: %s.Contract, Doc: doc, RoundTrip: rt})\n\t}\n",
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
