package codegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/suite"
)

// suiteDrafts are the drafts of the JSON Schema Test Suite the generator
// is checked against, each with the "$schema" its groups are read with
// when they declare none (the suite's rule: a draft's folder is in that
// draft).
var suiteDrafts = []struct{ Folder, Short, URL string }{
	{"draft4", "d4", "http://json-schema.org/draft-04/schema#"},
	{"draft6", "d6", "http://json-schema.org/draft-06/schema#"},
	{"draft7", "d7", "http://json-schema.org/draft-07/schema#"},
	{"draft2019-09", "d2019", "https://json-schema.org/draft/2019-09/schema"},
	{"draft2020-12", "d2020", "https://json-schema.org/draft/2020-12/schema"},
}

// suiteModule is the module path of the suite's temporary module.
const suiteModule = "github.com/lockstep-dev/lockstep/codegen/suitecheck"

// suiteRemote is the base URI the suite's tests fetch remotes/ from.
const suiteRemote = "http://localhost:1234/"

// knownDifferencesFile lists every place the generator or its generated
// code departs from the suite, each with its reason (see
// [readKnownDifferences]).
const knownDifferencesFile = "testdata/jsts-known-differences.txt"

// TestJSONSchemaSuite runs the required tests (not optional/) of every
// draft of the official JSON Schema Test Suite, kept beside the repository
// in ../shared/jsts, through the generator and the generated code: each
// test file of a draft becomes one contract, one message per group
// (schema files beside it; the suite's remotes/ mapped by the contract's
// schemaLocations), all of them generated into one temporary module and
// built into one test binary without the race detector, which decodes and
// validates every test's data as the runtime does ([suite.Run]). It logs
// the agreement per draft and keyword (test file), and fails on any group
// the generator refuses and any test whose verdict differs from the
// suite's, unless testdata/jsts-known-differences.txt lists it with its
// reason, and on any listed difference that no longer happens. Every data
// the generated code accepts must also round-trip: decoded and encoded
// again, it is the same JSON value.
func TestJSONSchemaSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of generated packages")
	}
	t.Parallel()
	jsts := sharedDir(t, "jsts")
	known, err := readKnownDifferences(knownDifferencesFile)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := corpusModuleDir(t, root, "jsts", jsts)
	writeCorpusModule(t, root, tmp, suiteModule)

	start := time.Now()
	type job struct {
		draft, short, url, file string
	}
	var jobs []job
	for _, d := range suiteDrafts {
		files, err := filepath.Glob(filepath.Join(jsts, "tests", d.Folder, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) < 20 {
			t.Fatalf("found only %d test files of %s in %s", len(files), d.Folder, jsts)
		}
		for _, f := range files {
			jobs = append(jobs, job{d.Folder, d.Short, d.URL, f})
		}
	}
	// The files are independent: they are generated side by side, each
	// into its own folder.
	results := make([]suitePackage, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				results[i], errs[i] = generateSuiteFile(tmp, jsts, j.draft, j.short, j.url, j.file)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	report := newSuiteReport()
	var pkgs []suitePackage
	for i, p := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		report.addFile(p)
		if len(p.Messages) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	t.Logf("suite: %d packages generated in %v", len(pkgs), time.Since(start).Round(time.Millisecond))
	writeSuiteCheck(t, tmp, pkgs)

	start = time.Now()
	bin := filepath.Join(tmp, "check.test")
	build := exec.Command("go", "test", "-c", "-vet=off", "-o", bin,
		"-gcflags="+suiteModule+"/...=-N -l -dwarf=false", "-ldflags=-w", "./check")
	build.Dir = tmp
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the generated suite does not build: %v\n%s", err, lastLines(out, 200))
	}
	t.Logf("suite: built in %v (%v of CPU)", time.Since(start).Round(time.Millisecond), cpuOf(build).Round(time.Millisecond))

	start = time.Now()
	cmd := exec.Command(bin, "-test.timeout=5m")
	cmd.Dir = filepath.Join(tmp, "check")
	out, err := cmd.CombinedOutput()
	t.Logf("suite: checked in %v (%v of CPU)", time.Since(start).Round(time.Millisecond), cpuOf(cmd).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("the generated suite check fails: %v\n%s", err, lastLines(out, 100))
	}
	for _, line := range bytes.Split(out, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("suite: "))
		if !ok {
			continue
		}
		var v suite.Verdict
		if err := json.Unmarshal(rest, &v); err != nil {
			t.Fatalf("bad verdict line %s: %v", line, err)
		}
		report.addVerdict(v)
	}
	if report.tests == 0 {
		t.Fatalf("the suite check printed no verdict:\n%s", lastLines(out, 50))
	}
	for _, l := range report.table() {
		t.Log(l)
	}
	for _, e := range report.differences(jsts, known) {
		t.Error(e)
	}
}

// suitePackage is one test file of the suite generated as one package.
type suitePackage struct {
	Draft, File, Path, Pkg string
	// Groups is the file's number of groups, Messages the names of those
	// that generated.
	Groups   int
	Messages []string
	// Refused holds the generator's error for each group it refused.
	Refused map[int]string
}

var (
	groupFile    = regexp.MustCompile(`\bg([0-9]+)\.json\b`)
	groupMessage = regexp.MustCompile(`/schemas/G([0-9]+)\b`)
)

// generateSuiteFile writes the contract of one test file of the suite
// into its own folder of tmp and generates it, leaving out each group the
// generator refuses (found from the files and pointers its errors name).
func generateSuiteFile(tmp, jsts, draft, short, draftURL, path string) (suitePackage, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	p := suitePackage{Draft: draft, File: filepath.Base(path), Path: path, Refused: map[int]string{}}
	p.Pkg = short + "_" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "_")
	groups, err := suite.Load(path)
	if err != nil {
		return p, err
	}
	p.Groups = len(groups)
	dir := filepath.Join(tmp, p.Pkg)
	if err := os.RemoveAll(dir); err != nil {
		return p, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return p, err
	}
	for i, g := range groups {
		schema, err := withDraft(g.Schema, draftURL)
		if err != nil {
			return p, err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("g%d.json", i)), schema, 0o644); err != nil {
			return p, err
		}
	}
	remotes := filepath.Join(jsts, "remotes")
	for {
		var msgs []string
		for i := range groups {
			if _, refused := p.Refused[i]; !refused {
				msgs = append(msgs, suite.MessageName(i))
			}
		}
		p.Messages = msgs
		if len(msgs) == 0 {
			return p, nil
		}
		if err := writeSuiteContract(dir, p.Pkg, remotes, msgs); err != nil {
			return p, err
		}
		_, genErr := Write(dir, io.Discard)
		if genErr == nil {
			return p, nil
		}
		progress := false
		for _, line := range strings.Split(genErr.Error(), "\n") {
			for _, re := range []*regexp.Regexp{groupFile, groupMessage} {
				for _, m := range re.FindAllStringSubmatch(line, -1) {
					i, _ := strconv.Atoi(m[1])
					if _, done := p.Refused[i]; !done && i < len(groups) {
						p.Refused[i] = line
						progress = true
					}
				}
			}
		}
		if !progress {
			// An error that names no group: find the groups one by one.
			for _, m := range msgs {
				i, _ := strconv.Atoi(strings.TrimPrefix(m, "G"))
				if err := writeSuiteContract(dir, p.Pkg, remotes, []string{m}); err != nil {
					return p, err
				}
				if _, err := Run(dir); err != nil {
					p.Refused[i] = strings.ReplaceAll(err.Error(), "\n", "; ")
					progress = true
				}
			}
		}
		if !progress {
			return p, fmt.Errorf("%s/%s does not generate, and no group alone fails: %v", draft, p.File, genErr)
		}
	}
}

// withDraft adds "$schema" to a schema object that has none.
func withDraft(schema json.RawMessage, draftURL string) ([]byte, error) {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 || s[0] != '{' {
		return s, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s, &m); err != nil {
		return nil, err
	}
	if _, ok := m["$schema"]; ok {
		return s, nil
	}
	head := `{"$schema":` + strconv.Quote(draftURL)
	rest := bytes.TrimSpace(s[1:])
	if len(rest) > 0 && rest[0] != '}' {
		head += ","
	}
	return append([]byte(head), rest...), nil
}

// writeSuiteContract writes the contract of a suite package with the
// given messages, and the package's hand-written file: its clause and
// the constructor table the check calls (so that the check never names a
// generated type; see newDocFunc).
func writeSuiteContract(dir, pkg, remotes string, msgs []string) error {
	var c strings.Builder
	fmt.Fprintf(&c, "contract: suite\nversion: \"1.0.0\"\nserver: server\nclient: client\n")
	fmt.Fprintf(&c, "schemaLocations:\n  %q: %q\n", suiteRemote, remotes)
	fmt.Fprintf(&c, "methods:\n  Check: {request: %s, response: %s}\nschemas:\n", msgs[0], msgs[0])
	var g strings.Builder
	fmt.Fprintf(&g, "// Package %s is generated from a test file of the JSON Schema Test Suite.\npackage %s\n\n", pkg, pkg)
	g.WriteString("// New returns a new value of each message's type, for the suite check.\nvar New = map[string]func() any{\n")
	for _, m := range msgs {
		i := strings.TrimPrefix(m, "G")
		fmt.Fprintf(&c, "  %s: {$ref: g%s.json}\n", m, i)
		fmt.Fprintf(&g, "\t%q: func() any { return new(%s) },\n", m, m)
	}
	g.WriteString("}\n")
	for _, name := range []string{"lockstep_types.gen.go", "lockstep_api.gen.go"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "contract.yaml"), []byte(c.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "doc.go"), []byte(g.String()), 0o644)
}

// writeSuiteCheck writes the test that runs in the temporary module.
func writeSuiteCheck(t *testing.T, tmp string, pkgs []suitePackage) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("package check\n\nimport (\n\t\"testing\"\n\n\t\"github.com/lockstep-dev/lockstep/codegen/internal/golden/suite\"\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\t%s %q\n", p.Pkg, suiteModule+"/"+p.Pkg)
	}
	b.WriteString(")\n\nfunc TestSuite(t *testing.T) {\n\tsuite.Run(t, []suite.Case{\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\t\t{Draft: %q, File: %q, Path: %q, Contract: %s.Contract, New: %s.New},\n", p.Draft, p.File, p.Path, p.Pkg, p.Pkg)
	}
	b.WriteString("\t})\n}\n")
	dir := filepath.Join(tmp, "check")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check_test.go"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// knownDifference is one entry of the known-differences file.
type knownDifference struct {
	// Kind is "refused" (the generator refuses the group), "disagrees"
	// (the generated code's verdict on the test is not the suite's) or
	// "changes" (decoding the test's data and encoding it again gives
	// another JSON value).
	Kind string
	// File is draft/file; Group and Test the descriptions (Test empty for
	// a refused group).
	File, Group, Test string
	// Reason says why.
	Reason string
	// line is where the entry is written.
	line int
}

func (k knownDifference) key() string {
	return k.Kind + "\x00" + k.File + "\x00" + k.Group + "\x00" + k.Test
}

// readKnownDifferences reads the known-differences file. Each entry is one
// line:
//
//	refused DRAFT/FILE "GROUP": REASON
//	disagrees DRAFT/FILE "GROUP" "TEST": REASON
//	changes DRAFT/FILE "GROUP" "TEST": REASON
//
// with the group's and the test's descriptions quoted as Go strings.
// Blank lines and lines starting with # are comments. Every entry must
// give a reason.
func readKnownDifferences(path string) (map[string]*knownDifference, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]*knownDifference{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(why string) error { return fmt.Errorf("%s:%d: %s", path, n+1, why) }
		k := &knownDifference{line: n + 1}
		var rest string
		var ok bool
		k.Kind, rest, ok = strings.Cut(line, " ")
		if !ok || (k.Kind != "refused" && k.Kind != "disagrees" && k.Kind != "changes") {
			return nil, bad("an entry starts with refused, disagrees or changes")
		}
		k.File, rest, _ = strings.Cut(rest, " ")
		quoted := func() (string, error) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return "", bad("a description must be a quoted Go string")
			}
			rest = strings.TrimSpace(rest[len(q):])
			return strconv.Unquote(q)
		}
		if k.Group, err = quoted(); err != nil {
			return nil, err
		}
		if k.Kind != "refused" {
			if k.Test, err = quoted(); err != nil {
				return nil, err
			}
		}
		reason, ok := strings.CutPrefix(rest, ":")
		k.Reason = strings.TrimSpace(reason)
		if !ok || k.Reason == "" {
			return nil, bad("an entry ends with a colon and its reason")
		}
		if _, dup := out[k.key()]; dup {
			return nil, bad("listed twice")
		}
		out[k.key()] = k
	}
	return out, nil
}

// suiteReport gathers the suite's outcome.
type suiteReport struct {
	files    []suitePackage
	verdicts map[string][]suite.Verdict // draft/file → verdicts
	tests    int
}

func newSuiteReport() *suiteReport {
	return &suiteReport{verdicts: map[string][]suite.Verdict{}}
}

func (r *suiteReport) addFile(p suitePackage) { r.files = append(r.files, p) }

func (r *suiteReport) addVerdict(v suite.Verdict) {
	k := v.Draft + "/" + v.File
	r.verdicts[k] = append(r.verdicts[k], v)
	r.tests++
}

// suiteCounts are the counts of one keyword or draft.
type suiteCounts struct {
	groups, generated, tests, agree, validated, reference int
	// fallbacks are the generated groups with no generated Validate.
	fallbacks int
}

func (c *suiteCounts) add(o suiteCounts) {
	c.groups += o.groups
	c.generated += o.generated
	c.tests += o.tests
	c.agree += o.agree
	c.validated += o.validated
	c.reference += o.reference
	c.fallbacks += o.fallbacks
}

// table returns the report's lines: per draft, then per keyword of each
// draft where the generated code disagrees with the suite or some group is
// refused.
func (r *suiteReport) table() []string {
	lines := []string{"suite: draft: groups generated/all (those without a generated Validate), tests agreeing/tests on them (decided by a generated Validate), jsonschema/v5 agreeing"}
	var perKeyword []string
	for _, d := range suiteDrafts {
		var total suiteCounts
		for _, p := range r.files {
			if p.Draft != d.Folder {
				continue
			}
			c := suiteCounts{groups: p.Groups, generated: len(p.Messages)}
			validatedGroups := map[int]bool{}
			for _, v := range r.verdicts[p.Draft+"/"+p.File] {
				if v.Validated {
					validatedGroups[v.Group] = true
				}
				c.tests++
				if v.Generated == v.Valid {
					c.agree++
				}
				if v.Reference == v.Valid {
					c.reference++
				}
				if v.Validated {
					c.validated++
				}
			}
			c.fallbacks = c.generated - len(validatedGroups)
			total.add(c)
			perKeyword = append(perKeyword, fmt.Sprintf("suite: %s/%s: %d/%d groups (%d fall back to jsonschema/v5), %d/%d tests agree (%d by a generated Validate), jsonschema/v5 %d/%d",
				d.Folder, p.File, c.generated, c.groups, c.fallbacks, c.agree, c.tests, c.validated, c.reference, c.tests))
		}
		lines = append(lines, fmt.Sprintf("suite: %s: %d/%d groups (%d fall back to jsonschema/v5), %d/%d tests agree (%d by a generated Validate), jsonschema/v5 %d/%d",
			d.Folder, total.generated, total.groups, total.fallbacks, total.agree, total.tests, total.validated, total.reference, total.tests))
	}
	return append(lines, perKeyword...)
}

// differences returns an error for each refusal and disagreement the
// known-differences file does not list, and for each entry of it that did
// not happen.
func (r *suiteReport) differences(jsts string, known map[string]*knownDifference) []string {
	var errs []string
	seen := map[string]bool{}
	for _, p := range r.files {
		groups, err := suite.Load(p.Path)
		if err != nil {
			return []string{err.Error()}
		}
		file := p.Draft + "/" + p.File
		for i := range groups {
			reason, refused := p.Refused[i]
			if !refused {
				continue
			}
			k := knownDifference{Kind: "refused", File: file, Group: groups[i].Description}
			if known[k.key()] != nil {
				seen[k.key()] = true
				continue
			}
			errs = append(errs, fmt.Sprintf("refused %s %q: %s", file, groups[i].Description, reason))
		}
		for _, v := range r.verdicts[file] {
			if v.RoundTrip != "" {
				g := groups[v.Group]
				k := knownDifference{Kind: "changes", File: file, Group: g.Description, Test: g.Tests[v.Test].Description}
				if known[k.key()] != nil {
					seen[k.key()] = true
				} else {
					errs = append(errs, fmt.Sprintf("changes %s %q %q: the round trip changes the JSON\n\tin  %s\n\tout %s",
						file, g.Description, g.Tests[v.Test].Description, compactJSON(g.Tests[v.Test].Data), v.RoundTrip))
				}
			}
			if v.Generated == v.Valid {
				continue
			}
			g := groups[v.Group]
			k := knownDifference{Kind: "disagrees", File: file, Group: g.Description, Test: g.Tests[v.Test].Description}
			if known[k.key()] != nil {
				seen[k.key()] = true
				continue
			}
			how := "the generated Validate"
			if !v.Validated {
				how = "jsonschema/v5 (the type has no generated Validate)"
			}
			errs = append(errs, fmt.Sprintf("disagrees %s %q %q: the suite says valid=%v, %s says %v (jsonschema/v5 alone: %v)\n\tschema %s\n\tdata %s\n\terror %s",
				file, g.Description, g.Tests[v.Test].Description, v.Valid, how, v.Generated, v.Reference, compactJSON(g.Schema), compactJSON(g.Tests[v.Test].Data), v.Error))
		}
	}
	var stale []*knownDifference
	for key, k := range known {
		if !seen[key] {
			stale = append(stale, k)
		}
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].line < stale[j].line })
	for _, k := range stale {
		errs = append(errs, fmt.Sprintf("%s:%d: listed, but does not happen: %s %s %q %q", knownDifferencesFile, k.line, k.Kind, k.File, k.Group, k.Test))
	}
	return errs
}

func compactJSON(data []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return string(data)
	}
	return b.String()
}
