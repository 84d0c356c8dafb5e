// Package codegen is lockstep's code generator: it turns a contract folder
// (contract.yaml or contract.json, and the JSON Schema files beside it) into
// a Go package of message types, the contract descriptor, and a typed client
// and server over the runtime in package framework.
//
// The pipeline is parse → validated model → templates → go/format:
// [contract] reads and checks the contract and bundles its schemas,
// [gomodel] maps the schemas to Go types, [gogen] renders them. Each stage
// returns errors that name the file, line and JSON pointer at fault.
package codegen

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-version"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gogen"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Output is what generating a contract's package produces.
type Output struct {
	// Files are the generated files.
	Files []gogen.File
	// Warnings name the lossy choices made for constructs Go cannot
	// express exactly, each with the schema's file, line and JSON pointer.
	Warnings []string
}

// Run loads the contract in dir and renders its package files. The
// package name is that of the Go files already in dir, or the folder's name.
func Run(dir string) (*Output, error) {
	pkg, err := model(dir)
	if err != nil {
		return nil, err
	}
	files, err := gogen.Generate(pkg, filepath.Base(pkg.Contract.File))
	if err != nil {
		return nil, err
	}
	return &Output{Files: files, Warnings: pkg.Warnings}, nil
}

// Model loads the contract in dir, with the version it forks from, and
// returns its Go model with every decision made (validator coverage,
// conversions), without rendering any file.
func Model(dir string) (*gomodel.Package, error) {
	pkg, err := model(dir)
	if err != nil {
		return nil, err
	}
	if err := gogen.Decide(pkg); err != nil {
		return nil, err
	}
	return pkg, nil
}

// model loads the contract in dir and builds its model.
func model(dir string) (*gomodel.Package, error) {
	c, err := contract.Load(dir)
	if err != nil {
		return nil, err
	}
	name, err := PackageName(dir)
	if err != nil {
		return nil, err
	}
	pkg, err := gomodel.Build(c, name)
	if err != nil {
		return nil, err
	}
	if c.ForkFrom != "" {
		if pkg.Fork, err = loadFork(dir, c); err != nil {
			return nil, err
		}
	}
	return pkg, nil
}

// Generate is [Run] without the warnings.
func Generate(dir string) ([]gogen.File, error) {
	out, err := Run(dir)
	if err != nil {
		return nil, err
	}
	return out.Files, nil
}

// loadFork loads and models the contract a contract forks from, and finds
// its package's import path.
func loadFork(dir string, c *contract.Contract) (*gomodel.Fork, error) {
	oldDir := filepath.Join(dir, filepath.FromSlash(c.ForkFrom))
	where := fmt.Sprintf("%s: forkFrom %s", filepath.Base(c.File), c.ForkFrom)
	old, err := contract.Load(oldDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if old.Name != c.Name || old.Server != c.Server || old.Client != c.Client {
		return nil, fmt.Errorf("%s is contract %s (%s → %s), not an earlier version of %s (%s → %s)",
			where, old.Name, old.Client, old.Server, c.Name, c.Client, c.Server)
	}
	ov, err1 := version.NewVersion(old.Version)
	cv, err2 := version.NewVersion(c.Version)
	if err1 != nil || err2 != nil || !ov.LessThan(cv) {
		return nil, fmt.Errorf("%s is version %s, which is not earlier than %s", where, old.Version, c.Version)
	}
	name, err := PackageName(oldDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	pkg, err := gomodel.Build(old, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	// As its own generation decides it: which of its types have a
	// Validate, which conversions into them call.
	pkg.DecideValidation()
	imp, err := importPath(oldDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &gomodel.Fork{Old: pkg, Import: imp, Alias: name}, nil
}

// importPath returns the Go import path of the package in dir, from the
// go.mod of the module that holds it.
func importPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			module := ""
			for _, line := range strings.Split(string(data), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
					module = strings.Trim(f[1], `"`)
				}
			}
			if module == "" {
				return "", fmt.Errorf("%s names no module", filepath.Join(d, "go.mod"))
			}
			rel, err := filepath.Rel(d, abs)
			if err != nil {
				return "", err
			}
			return path.Join(module, filepath.ToSlash(rel)), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", abs)
		}
	}
}

// Write generates the package of the contract in dir and writes its files
// there, leaving files whose content is unchanged untouched. Warnings go
// to warnings, one a line.
func Write(dir string, warnings io.Writer) ([]string, error) {
	out, err := Run(dir)
	if err != nil {
		return nil, err
	}
	for _, w := range out.Warnings {
		fmt.Fprintln(warnings, w)
	}
	var written []string
	for _, f := range out.Files {
		p := filepath.Join(dir, f.Name)
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

// PackageName returns the package name of the non-test Go files in dir that
// the generator did not write, or the folder's name made an identifier.
func PackageName(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || n == gogen.TypesFile || n == gogen.APIFile || n == gogen.ForkFile {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, n), nil, parser.PackageClauseOnly)
		if err != nil {
			return "", fmt.Errorf("reading the package name: %w", err)
		}
		return f.Name.Name, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	name := strings.ToLower(gomodel.ImportName(filepath.Base(abs)))
	return name, nil
}

// Stale returns the generated files of the contract in dir that are missing
// or differ from what the generator writes now.
func Stale(dir string) ([]string, error) {
	files, err := Generate(dir)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if old, err := os.ReadFile(p); err != nil || !bytes.Equal(old, f.Content) {
			stale = append(stale, p)
		}
	}
	return stale, nil
}
