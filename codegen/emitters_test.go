package codegen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// jsonwireName matches a use of a framework/jsonwire identifier in Go
// source: what an emitter writes into generated code.
var jsonwireName = regexp.MustCompile(`\bjsonwire\.([A-Z][A-Za-z0-9_]*)`)

// TestEmittersReached fails when the generator can write a call of a
// framework/jsonwire helper that no golden case's generated code contains:
// every emitter must be compiled, and run by the case's tests, somewhere.
// The emitters are the string literals and templates of codegen/gogen that
// name a jsonwire identifier.
func TestEmittersReached(t *testing.T) {
	t.Parallel()
	emitted := emitterNames(t)
	if len(emitted) < 20 {
		t.Fatalf("found only %d jsonwire names in codegen/gogen: %v", len(emitted), emitted)
	}
	reached := map[string]bool{}
	for _, c := range goldenContracts(t) {
		files, err := filepath.Glob(filepath.Join(filepath.Dir(c), "*.gen.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range jsonwireName.FindAllStringSubmatch(string(b), -1) {
				reached[m[1]] = true
			}
		}
	}
	var missing []string
	for name, where := range emitted {
		if !reached[name] {
			missing = append(missing, name+" (emitted in "+where+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no golden case under internal/golden generates these jsonwire helpers; add a case whose tests run them:\n  %s",
			strings.Join(missing, "\n  "))
	}
}

// emitterNames returns each jsonwire identifier codegen/gogen writes, with
// the file that writes it.
func emitterNames(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(text, file string) {
		for _, m := range jsonwireName.FindAllStringSubmatch(text, -1) {
			if _, ok := out[m[1]]; !ok {
				out[m[1]] = file
			}
		}
	}
	sources, err := filepath.Glob("gogen/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, src := range sources {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, src, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					add(s, src)
				}
			}
			return true
		})
	}
	templates, err := filepath.Glob("gogen/templates/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range templates {
		b, err := os.ReadFile(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		add(string(b), tmpl)
	}
	return out
}
