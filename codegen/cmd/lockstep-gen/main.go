// Command lockstep-gen generates the Go package of a lockstep contract, and
// compares two contract versions for breaking changes.
//
// In a contract's folder, through go generate:
//
//	//go:generate go run github.com/lockstep-dev/lockstep/codegen/cmd/lockstep-gen
//
// it reads contract.yaml (or contract.yml, contract.json) and writes
// lockstep_types.gen.go and lockstep_api.gen.go beside it, and
// lockstep_fork.gen.go when the contract has forkFrom. Usage:
//
//	lockstep-gen [-check] [-v] [DIR|PATTERN ...]   generate (or, with -check, verify) the package in each DIR (default .)
//	lockstep-gen diff [-json] OLD NEW compare the contracts in folders OLD and NEW
//
// A Go package pattern (./..., ./api/...) stands for every package it
// matches that has a contract file, as go list finds them, so that one CI
// line checks a whole module: lockstep-gen -check ./... . With -check the
// exit status is go vet's: 0 when every generated file is fresh, 1 when
// one is missing or stale (each named), 2 when a folder or pattern cannot
// be read or its contract does not load.
//
// With -v it also prints, for each message, whether its generated Validate
// checks it or, when the runtime falls back to jsonschema/v5 for it, which
// keyword made it fall back and why (the message's doc comment says the
// same). With more than one DIR, each error line starts with its DIR and ": ".
// diff exits with status 1 when NEW breaks a peer of OLD without a major
// version bump, or changes the fingerprint under the same version (each
// message says which version to bump), and 2 when it cannot compare them.
// Its report marks the changes that break an old client of a new server
// BREAKING, and those that break only a new client of an old server
// NEW→OLD; a change breaking neither order is compatible both ways.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/lockstep-dev/lockstep/codegen"
	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/diff"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command without its process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "diff" {
		return runDiff(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("lockstep-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "do not write: fail when the generated files are missing or stale")
	verbose := fs.Bool("v", false, "print, for each message, whether generated code validates it, or which keyword makes it fall back to jsonschema/v5 and why")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lockstep-gen [-check] [-v] [DIR|PATTERN ...]\n       lockstep-gen diff [-json] OLD NEW")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dirs, err := expandPatterns(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	// The folders are independent, so they are generated side by side,
	// each writing into its own buffer; the buffers are written out in the
	// folders' order, so the output is the same as one after the other.
	outs := make([]bytes.Buffer, len(dirs))
	failed := make([]bool, len(dirs))
	broken := make([]bool, len(dirs)) // its folder or contract could not be read
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(dirs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				failed[i], broken[i] = runDir(dirs[i], len(dirs) > 1, *check, &outs[i])
				if *verbose && !failed[i] && !*check {
					failed[i] = !printCoverage(dirs[i], len(dirs) > 1, &outs[i])
				}
			}
		}()
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	status := 0
	for i := range dirs {
		_, _ = stderr.Write(outs[i].Bytes())
		switch {
		case broken[i] && *check:
			status = 2
		case failed[i] && status == 0:
			status = 1
		}
	}
	return status
}

// expandPatterns turns the command's arguments into folders: a Go package
// pattern (one with "...") into the folders of the packages it matches
// that hold a contract file, as go list finds them; any other argument is
// a folder. No argument is the current folder.
func expandPatterns(args []string) ([]string, error) {
	if len(args) == 0 {
		return []string{"."}, nil
	}
	var dirs []string
	for _, a := range args {
		if !strings.Contains(a, "...") {
			dirs = append(dirs, a)
			continue
		}
		cmd := exec.Command("go", "list", "-e", "-f", "{{.Dir}}", a)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("lockstep-gen: go list %s: %v\n%s", a, err, errOut.String())
		}
		found := 0
		for _, dir := range strings.Fields(string(out)) {
			if _, err := contract.Find(dir); err == nil {
				dirs = append(dirs, dir)
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("lockstep-gen: no package matching %s has a contract file (%s)", a, strings.Join(contract.FileNames, ", "))
		}
	}
	return dirs, nil
}

// runDir generates (or, with check, verifies) the package in dir, writing
// warnings and errors to stderr, and reports whether it failed, and
// whether that was because dir could not be read or its contract loaded
// (broken) rather than stale files. An error
// names the schema's file relative to its contract's folder; with several
// folders (named), it names the folder too.
func runDir(dir string, named, check bool, stderr io.Writer) (failed, broken bool) {
	prefix := ""
	if named {
		prefix = dir + ": "
	}
	if check {
		stale, err := codegen.Stale(dir)
		if err != nil {
			fmt.Fprintln(stderr, prefix+err.Error())
			return true, true
		}
		for _, f := range stale {
			fmt.Fprintf(stderr, "%s is stale: run lockstep-gen in %s\n", f, dir)
		}
		return len(stale) > 0, false
	}
	if _, err := codegen.Write(dir, stderr); err != nil {
		fmt.Fprintln(stderr, prefix+err.Error())
		return true, true
	}
	return false, false
}

// printCoverage writes, for each message of the contract in dir, whether
// generated code validates it or why the runtime validates it with
// jsonschema/v5 instead, and reports whether it could tell.
func printCoverage(dir string, named bool, w io.Writer) bool {
	prefix := ""
	if named {
		prefix = dir + ": "
	}
	pkg, err := codegen.Model(dir)
	if err != nil {
		fmt.Fprintln(w, prefix+err.Error())
		return false
	}
	cov := pkg.Coverage()
	names := make([]string, 0, len(cov))
	for name := range cov {
		names = append(names, name)
	}
	sort.Strings(names)
	fallbacks := 0
	for _, name := range names {
		why := cov[name]
		if len(why) == 0 {
			fmt.Fprintf(w, "%smessage %s: validated by its generated Validate\n", prefix, name)
			continue
		}
		fallbacks++
		fmt.Fprintf(w, "%smessage %s: validated by jsonschema/v5: %s\n", prefix, name, strings.Join(why, "; "))
	}
	fmt.Fprintf(w, "%s%d of %d messages fall back to jsonschema/v5\n", prefix, fallbacks, len(names))
	return true
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockstep-gen diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "write the report as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lockstep-gen diff [-json] OLD NEW")
		fs.PrintDefaults()
	}
	// Flags may follow the folders: diff OLD NEW --json.
	var folders []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		folders = append(folders, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(folders) != 2 {
		fs.Usage()
		return 2
	}
	var models [2]*contract.Contract
	for i, dir := range folders {
		c, err := contract.Load(dir)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		models[i] = c
	}
	oldModel, newModel := models[0].Handshake(), models[1].Handshake()
	report, err := diff.Compare(&oldModel, &newModel)
	if err != nil {
		fmt.Fprintf(stderr, "comparing %s and %s: %v\n", filepath.Clean(folders[0]), filepath.Clean(folders[1]), err)
		return 2
	}
	if *asJSON {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		_, _ = stdout.Write(b.Bytes())
	} else if err := report.WriteText(stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if err := report.Err(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
