// Package corpus checks packages generated from the real-world corpus
// (../shared/realworld beside the repository): each schema generated as a one-message
// contract whose message is Doc. The corpus test in package codegen writes
// a temporary module of those packages and a test there that calls [Run].
package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/jsonvalue"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Case is one schema of the corpus and its generated package.
type Case struct {
	// Name is the corpus folder; Dir its absolute path, holding the
	// instances (instance-*.json).
	Name, Dir string
	// Contract is the generated contract.
	Contract *framework.Contract
	// Doc describes the generated message type for difftest.
	Doc func(seeds ...string) difftest.Message
	// RoundTrip decodes an instance into the generated type and encodes it,
	// failing when the type's generated encoder writes other bytes than
	// json.Marshal.
	RoundTrip func([]byte) ([]byte, error)
}

// ForNew returns the Doc and RoundTrip of the generated type whose new
// values newValue returns (each generated package's NewDoc). It is not
// generic, and the check calls it with a function, not a type: a package
// that names a generated type compiles again the methods of every generic
// type its members use (see package codegen's newDocFunc).
func ForNew(newValue func() any) (func(seeds ...string) difftest.Message, func([]byte) ([]byte, error)) {
	return func(seeds ...string) difftest.Message { return difftest.ForNew("Doc", newValue, seeds...) },
		func(data []byte) ([]byte, error) {
			v := newValue()
			if err := json.Unmarshal(data, v); err != nil {
				return nil, err
			}
			if _, ok := v.(jsonwire.Appender); ok {
				if err := difftest.EncodersAgree(v); err != nil {
					return nil, fmt.Errorf("the generated encoder differs from encoding/json: %w", err)
				}
			}
			return json.Marshal(v)
		}
}

// Run checks every case: each instance the bundled schema accepts must
// decode and encode back to the same JSON value; the generated Validate
// must agree with jsonschema/v5 on every instance (those the schema
// refuses too) and on mutants of the valid ones. It prints one summary
// line per case and one for the corpus, each starting with "realworld: ".
// The cases are independent (each its own contract, type and instances),
// so they run in parallel: the check takes the machine's cores, not one.
func Run(t *testing.T, cases []Case) {
	var mu sync.Mutex
	var total Stats
	// The group returns when every case in it has finished.
	t.Run("corpus", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				s := check(t, c)
				fmt.Printf("realworld: %s: %d/%d valid instances round-trip (%d invalid), %d checked against jsonschema/v5, %d disagreements\n",
					c.Name, s.RoundTrips, s.Instances, s.Invalid, s.Checked, s.Disagreements)
				mu.Lock()
				defer mu.Unlock()
				total.Schemas += s.Schemas
				total.Instances += s.Instances
				total.Invalid += s.Invalid
				total.RoundTrips += s.RoundTrips
				total.Checked += s.Checked
				total.Disagreements += s.Disagreements
			})
		}
	})
	fmt.Printf("realworld: total: %d/%d schemas checked, %d/%d valid instances round-trip (%d real instances the schemas refuse), %d instances and mutants checked against jsonschema/v5, %d disagreements\n",
		total.Schemas, len(cases), total.RoundTrips, total.Instances, total.Invalid, total.Checked, total.Disagreements)
}

// Stats are the counts of one case, or of the corpus.
type Stats struct {
	// Schemas is the number of cases checked to the end.
	Schemas int
	// Instances are the real instances the schema accepts, RoundTrips
	// those that round-trip, and Invalid the real ones it refuses.
	Instances, RoundTrips, Invalid int
	// Checked is the number of documents (real, generated and mutated)
	// both validators judged, and Disagreements those they judged apart.
	Checked, Disagreements int
}

// check checks one case; see [Run].
func check(t *testing.T, c Case) Stats {
	files, err := filepath.Glob(filepath.Join(c.Dir, "instance-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("%s has no instances", c.Name)
	}
	var seeds []string
	var invalid [][]byte
	ok := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Contract.ValidateJSON("Doc", data); err != nil {
			// A real document the schema refuses (projects' examples lag
			// behind their schemas): no round trip, but both validators
			// must refuse it.
			invalid = append(invalid, data)
			continue
		}
		seeds = append(seeds, string(data))
		out, err := c.RoundTrip(data)
		switch {
		case err != nil:
			t.Errorf("%s: round trip: %v", filepath.Base(f), err)
		case !jsonvalue.Same(decodeNumbers(t, data), decodeNumbers(t, out), sameInstant):
			t.Errorf("%s: round trip changed the JSON\n in: %s\nout: %s", filepath.Base(f), compact(data), out)
		default:
			ok++
		}
	}
	if len(seeds) == 0 {
		t.Fatalf("%s: no instance is valid for its schema", c.Name)
	}
	doc := c.Doc(seeds...)
	disagree := 0
	for _, data := range invalid {
		if v := difftest.Compare(c.Contract, doc, data, false); !v.Agree() {
			disagree++
			t.Errorf("invalid instance: generated says %v, jsonschema/v5 says %v\n%s", v.Generated, v.Reference, compact(data))
		}
	}
	stats := difftest.Run(t, c.Contract, difftest.Options{Seed: 1, Generated: 8, Mutants: 8}, doc)
	return Stats{
		Schemas:       1,
		Instances:     len(seeds),
		RoundTrips:    ok,
		Invalid:       len(invalid),
		Checked:       stats.Instances + len(invalid),
		Disagreements: stats.Mismatches + disagree,
	}
}

// decodeNumbers decodes JSON with numbers as json.Number.
func decodeNumbers(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	return v
}

// sameInstant compares the corpus's strings up to the one normalisation
// docs/codegen-design.md names beside numbers by value: a date-time
// re-encoded by time.Time is the same instant (…07.960Z is …07.96Z,
// +00:00 is Z).
func sameInstant(a, b string) bool {
	if a == b {
		return true
	}
	x, errx := time.Parse(time.RFC3339Nano, a)
	y, erry := time.Parse(time.RFC3339Nano, b)
	return errx == nil && erry == nil && x.Equal(y)
}

func compact(data []byte) string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return string(data)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
