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
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gogen"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Generate loads the contract in dir and renders its package files. The
// package name is that of the Go files already in dir, or the folder's name.
func Generate(dir string) ([]gogen.File, error) {
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
	return gogen.Generate(pkg, filepath.Base(c.File))
}

// Write generates the package of the contract in dir and writes its files
// there, leaving files whose content is unchanged untouched.
func Write(dir string) ([]string, error) {
	files, err := Generate(dir)
	if err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
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
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || n == gogen.TypesFile || n == gogen.APIFile {
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
