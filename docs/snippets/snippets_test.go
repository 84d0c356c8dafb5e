package snippets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// imports are the packages a snippet may use by name without importing
// them: lockstep's and the standard library's that the documentation
// uses. A generic generated package (v1, v2: the reader's own contract)
// stays open.
var imports = map[string]string{
	"framework":     "github.com/lockstep-dev/lockstep/framework",
	"handshake":     "github.com/lockstep-dev/lockstep/handshake",
	"discovery":     "github.com/lockstep-dev/lockstep/framework/discovery",
	"upgradesim":    "github.com/lockstep-dev/lockstep/framework/upgradesim",
	"certs":         "github.com/lockstep-dev/lockstep/framework/certs",
	"frameworktest": "github.com/lockstep-dev/lockstep/framework/frameworktest",
	"context":       "context",
	"errors":        "errors",
	"fmt":           "fmt",
	"http":          "net/http",
	"json":          "encoding/json",
	"log":           "log",
	"os":            "os",
	"signal":        "os/signal",
	"slog":          "log/slog",
	"strings":       "strings",
	"syscall":       "syscall",
	"testing":       "testing",
	"time":          "time",
	"tls":           "crypto/tls",
}

// workspaceImports are more packages a snippet may use by name: the
// nested modules' (OpenTelemetry, the sample's generated APIs), which the
// framework's go.mod does not require, so they resolve only in the
// workspace (go.work) that make test runs in. Outside it (GOWORK=off)
// they are left open, as the reader's own packages are, and the test
// says so.
var workspaceImports = map[string]string{
	"otellockstep": "github.com/lockstep-dev/lockstep/otel",
	"sdktrace":     "go.opentelemetry.io/otel/sdk/trace",
	"nsv2":         "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2",
	"nhv2":         "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2",
}

// inWorkspace says whether the go command uses a workspace here, and so
// resolves workspaceImports.
var inWorkspace = sync.OnceValue(func() bool {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	gowork := strings.TrimSpace(string(out))
	return err == nil && gowork != "" && gowork != "off"
})

// importsFor returns the packages snippets may use by name here: imports,
// and workspaceImports in the workspace.
func importsFor(t *testing.T) map[string]string {
	t.Helper()
	all := maps.Clone(imports)
	if !inWorkspace() {
		t.Logf("no go.work in use: snippets' uses of %v are not checked", slices.Sorted(maps.Keys(workspaceImports)))
		return all
	}
	maps.Copy(all, workspaceImports)
	return all
}

// block is one ```go block of a page.
type block struct {
	page string
	line int // of the block's first line of code, 1-based
	src  string
}

// blocks returns the ```go blocks of a Markdown page that name no file.
func blocks(page string, md []byte) []block {
	var out []block
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	n := 0
	var cur *block
	var indent string
	var lines []string
	for sc.Scan() {
		n++
		text := sc.Text()
		trimmed := strings.TrimLeft(text, " \t")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			info := strings.Fields(strings.TrimPrefix(trimmed, "```"))
			if len(info) == 1 && info[0] == "go" {
				cur = &block{page: page, line: n + 1}
				indent = text[:len(text)-len(trimmed)]
				lines = nil
			} else {
				cur = &block{} // another block: skipped to its end
			}
		case cur != nil && strings.HasPrefix(trimmed, "```"):
			if cur.page != "" {
				cur.src = strings.Join(lines, "\n") + "\n"
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			lines = append(lines, strings.TrimPrefix(text, indent))
		}
	}
	return out
}

// placeholder rewrites: `…` stands for what the reader writes.
var placeholders = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`…\s*,`), ""},
	{regexp.MustCompile(`\{\s*…\s*\}`), "{}"},
	{regexp.MustCompile(`\(\s*…\s*\)`), "()"},
	{regexp.MustCompile(`…`), "ellipsis"}, // a value the reader gives: an undeclared name
}

func fill(src string) string {
	for _, p := range placeholders {
		src = p.re.ReplaceAllString(src, p.with)
	}
	return src
}

var packageClause = regexp.MustCompile(`(?m)^package \w+`)

// forms returns the files a snippet may be, in the order they are tried,
// each with the number of lines put before the snippet's first.
func forms(src string, imports map[string]string) (files []string, offsets []int) {
	var imps []string
	for name, path := range imports {
		if regexp.MustCompile(`\b` + name + `\.`).MatchString(src) {
			imps = append(imps, fmt.Sprintf("import %s %q\n", name, path))
		}
	}
	sort.Strings(imps)
	prelude := strings.Join(imps, "")
	if loc := packageClause.FindStringIndex(src); loc != nil {
		end := loc[1]
		head := src[:end] + "\n" + prelude
		return []string{head + src[end:]}, []int{strings.Count(prelude, "\n") + 1}
	}
	for _, wrap := range [][2]string{
		{"package snippet\n" + prelude, ""},
		{"package snippet\n" + prelude + "func _() error {\n", "}\n"},
		{"package snippet\n" + prelude + "var _ = readersType{\n", "}\n"},
	} {
		files = append(files, wrap[0]+src+wrap[1])
		offsets = append(offsets, strings.Count(wrap[0], "\n"))
	}
	return files, offsets
}

// ignored says whether a type error is one a fragment may have: a name it
// leaves to the reader, a variable it declares for the reader to use, a
// function that only shows a signature, a body cut short.
func ignored(msg string) bool {
	if name, ok := strings.CutPrefix(msg, "undefined: "); ok && !strings.Contains(name, ".") {
		return true
	}
	for _, s := range []string{"declared and not used", "imported and not used", "missing function body", "missing return"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// check type-checks a snippet and returns its errors as page:line: text.
func check(b block, imp *exportImporter) []string {
	src := fill(b.src)
	files, offsets := forms(src, imp.names)
	var parseErr error
	for i, file := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "snippet.go", file, parser.ParseComments)
		if err != nil {
			if parseErr == nil {
				parseErr = err
			}
			continue
		}
		var errs []string
		conf := types.Config{Importer: imp, Error: func(err error) {
			te := err.(types.Error)
			if ignored(te.Msg) {
				return
			}
			pos := fset.Position(te.Pos)
			errs = append(errs, fmt.Sprintf("%s:%d: %s", b.page, b.line+pos.Line-1-offsets[i], te.Msg))
		}}
		_, _ = conf.Check("snippet", fset, []*ast.File{f}, nil)
		return errs
	}
	return []string{fmt.Sprintf("%s:%d: not Go in any form (declarations, statements, keyed fields): %v", b.page, b.line, parseErr)}
}

// exportImporter imports packages from the export data the go command
// builds for them (go list -export), as the compiler does.
type exportImporter struct {
	names map[string]string // the packages snippets may use, by name
	mu    sync.Mutex
	files map[string]string
	fset  *token.FileSet
	inner types.Importer
}

func newImporter(t *testing.T) *exportImporter {
	t.Helper()
	names := importsFor(t)
	var paths []string
	for _, p := range names {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, paths...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	imp := &exportImporter{names: names, files: map[string]string{}, fset: token.NewFileSet()}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		imp.files[p.ImportPath] = p.Export
	}
	imp.inner = importer.ForCompiler(imp.fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := imp.files[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	return imp
}

func (e *exportImporter) Import(path string) (*types.Package, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inner.Import(path)
}

// pages are README.md and docs/*.md, as they are now.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, docs...)
}

func TestDocSnippetsTypeCheck(t *testing.T) {
	imp := newImporter(t)
	total := 0
	for _, page := range pages(t) {
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(filepath.ToSlash(page), "../")
		name = strings.TrimPrefix(name, "../")
		if !strings.HasPrefix(name, "README") {
			name = "docs/" + name
		}
		for _, b := range blocks(name, md) {
			total++
			b := b
			t.Run(fmt.Sprintf("%s:%d", b.page, b.line), func(t *testing.T) {
				for _, e := range check(b, imp) {
					t.Error(e)
				}
			})
		}
	}
	if total == 0 {
		t.Fatal("no Go snippet found: the pages moved?")
	}
	t.Logf("%d snippets checked", total)
}

// TestCheckerCatchesMistakes keeps the checker honest: snippets with the
// mistakes it exists for fail, and fragments a reader completes pass.
func TestCheckerCatchesMistakes(t *testing.T) {
	imp := newImporter(t)
	cases := []struct {
		src  string
		want string // a part of the error, or "" for none
	}{
		{"cl := framework.ClientConfig{Component: \"kubelet\", NoSuchOption: true}", "unknown field NoSuchOption"},
		{"creds, _ := framework.LoadCredentials(framework.MTLSFiles{})\ntr := creds.Transport()", "not enough arguments"},
		{"framework.NoSuchFunction()", "undefined: framework.NoSuchFunction"},
		{"var x int = framework.FailFast()", "cannot use framework.FailFast()"},
		{"srv, err := framework.NewServer(framework.ServerConfig{Component: c, Release: …})\nsrv.Start(ctx)", "too many arguments"},
		{"client, err := framework.NewClient(contract, framework.ClientConfig{…, Component: \"kubelet\"})\nreturn err", ""},
		{"func (m *NodeStatus) Validate() error", ""},
		{"Invariants: []upgradesim.Invariant{{Name: \"x\", During: func(c *upgradesim.Cluster) error { … }}},", ""},
		{"Invariants: []upgradesim.Invariant{{Nom: \"x\"}},", "unknown field Nom"},
		{"package v2\n\n//go:generate go run x\n", ""},
	}
	if inWorkspace() {
		cases = append(cases, []struct {
			src  string
			want string
		}{
			{"framework.ServerConfig{Interceptors: []framework.Interceptor{otellockstep.NoSuchInterceptor(42, \"x\")}}", "undefined: otellockstep.NoSuchInterceptor"},
			{"tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))\notellockstep.ServerInterceptor(otellockstep.WithTracerProvider(tp))", ""},
			{"otellockstep.ServerInterceptor(otellockstep.WithTracerProvider(42))", "cannot use 42"},
			{"cl, err := framework.NewClient(nsv2.Contract, framework.ClientConfig{})", ""},
			{"nsv2.NoSuchContract", "undefined: nsv2.NoSuchContract"},
		}...)
	}
	for _, tc := range cases {
		errs := check(block{page: "test.md", line: 1, src: tc.src}, imp)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%q: %v", tc.src, errs)
		case tc.want != "" && !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }):
			t.Errorf("%q: %v, want an error with %q", tc.src, errs, tc.want)
		}
	}
}
