package framework_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the root module's path.
const modulePath = "github.com/lockstep-dev/lockstep/"

// layers gives each package of the framework's tree (and the leaves it
// imports) its layer, as docs/design.md's layout section lists them: a
// package imports only packages of lower layers; the top layer's
// packages, built on the public API, may also import each other.
var layers = map[string]int{
	"handshake":                                0,
	"framework/protocol":                       0,
	"framework/internal/apierror":              0,
	"framework/internal/conns":                 0,
	"framework/internal/selvalue":              0,
	"framework/internal/share":                 0,
	"framework/internal/lifecycle":             0,
	"framework/internal/ready":                 0,
	"framework/internal/schema":                1,
	"framework/internal/model":                 1,
	"framework/internal/topicmsg/idlewatchers": 0,
	"framework/certs":                          0,
	"framework/benchkit/benchmsg":              1,
	"framework/benchkit/benchrun":              0,
	"internal/benchhook":                       0,
	"framework/jsonwire":                       1,
	"framework/internal/wire":                  2,
	"framework/internal/limits":                1,
	"framework/internal/drain":                 1,
	"framework/internal/route":                 1,
	"framework/internal/identity":              1,
	"framework/internal/sessions":              2,
	"framework/internal/probe":                 0,
	"framework/internal/metrics":               1,
	"framework/internal/status":                1,
	"framework/internal/replay":                1,
	"framework/internal/autobatch":             0,
	"framework/internal/body":                  0,
	"framework/internal/topicmsg":              2,
	"framework/internal/frames":                2,
	"framework/internal/watch":                 3,
	"framework/internal/clienthttp":            3,
	"framework/internal/hello":                 3,
	"framework/internal/heartbeat":             3,
	"framework/internal/topics":                3,
	"framework/internal/admit":                 3,
	"framework/internal/dispatch":              3,
	"framework/internal/resend":                4,
	"framework":                                5,
	"framework/discovery":                      6,
	"framework/frameworktest":                  6,
	"framework/upgradesim":                     6,
	"framework/benchkit/benchgen":              6,
	"framework/benchkit/selectrun":             6,
	"framework/cmd/lockstepctl":                6,
	"codegen/contract":                         6,
}

const topLayer = 6

// TestPackagesImportOnlyLowerLayers reads the imports of every hand-written
// non-test file under framework/ and checks them against the layers.
func TestPackagesImportOnlyLowerLayers(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Join("framework", filepath.Dir(path)))
		from, ok := layers[pkg]
		if !ok {
			t.Errorf("%s: package %s has no layer: add it to docs/design.md's layout and to layers", path, pkg)
			return nil
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			target, ours := strings.CutPrefix(p, modulePath)
			if !ours {
				continue
			}
			to, ok := layers[target]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which has no layer", path, target)
			case to > from || to == from && from != topLayer:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports run down the layers only", path, from, target, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLayersAreDesignsLayout checks layers against docs/design.md's layout
// table, so that neither drifts from the other: every package of layers
// is named in a row of the table (or under a row's `dir/...`), and its
// layer is the row's (or within the row's range, as 1–2).
func TestLayersAreDesignsLayout(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ lo, hi int } // hi < 0: no layer (—)
	rows := map[string]row{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "| ") {
			continue
		}
		r := row{-1, -1}
		layer := strings.TrimSpace(cells[1])
		if lo, hi, ok := strings.Cut(layer, "–"); ok {
			r.lo, _ = strconv.Atoi(lo)
			r.hi, _ = strconv.Atoi(hi)
		} else if n, err := strconv.Atoi(layer); err == nil {
			r = row{n, n}
		} else if layer != "—" {
			continue // another table's row
		}
		for _, name := range strings.Split(cells[2], ",") {
			name = strings.Trim(strings.TrimSpace(name), "`")
			if name != "" {
				rows[name] = r
			}
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/design.md has no layout table")
	}
	for pkg, layer := range layers {
		r, ok := rows[pkg]
		for dir := pkg; !ok && strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			r, ok = rows[dir+"/..."]
		}
		switch {
		case !ok:
			t.Errorf("%s (layer %d) has no row in docs/design.md's layout table", pkg, layer)
		case r.hi >= 0 && (layer < r.lo || layer > r.hi):
			t.Errorf("%s is of layer %d here and %d–%d in docs/design.md", pkg, layer, r.lo, r.hi)
		}
	}
}
