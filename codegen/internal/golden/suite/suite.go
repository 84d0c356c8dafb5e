// Package suite checks packages generated from the official JSON Schema
// Test Suite (json-schema-org/JSON-Schema-Test-Suite, kept beside the
// repository in ../shared/jsts): each test file of a draft becomes one
// contract whose messages are the file's groups (message G<i> is group i),
// and each test's data is decoded and validated as the runtime does it,
// and by jsonschema/v5 with the runtime's settings. The suite test in
// package codegen writes a temporary module of those packages and a test
// there that calls [Run]; it reads the verdicts [Run] prints and compares
// them with the suite and with its list of known differences.
package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/jsonvalue"
	"github.com/lockstep-dev/lockstep/framework"
)

// Case is one generated package: the groups of one test file that
// generate.
type Case struct {
	// Draft is the suite's draft folder (draft7, draft2020-12, …), File the
	// test file's name in it and Path the file's absolute path.
	Draft, File, Path string
	// Contract is the generated contract.
	Contract *framework.Contract
	// New returns a new value of the generated type of each message,
	// keyed by message name.
	New map[string]func() any
}

// Group is one group of a test file, as the suite writes it.
type Group struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []Test          `json:"tests"`
}

// Test is one test of a group.
type Test struct {
	Description string          `json:"description"`
	Data        json.RawMessage `json:"data"`
	Valid       bool            `json:"valid"`
}

// Verdict is the outcome of one test, printed as one line "suite: " and
// its JSON.
type Verdict struct {
	Draft string `json:"draft"`
	File  string `json:"file"`
	Group int    `json:"group"`
	Test  int    `json:"test"`
	// Valid is the suite's verdict, Generated the generated path's (the
	// runtime's: generated decoding and Validate, or jsonschema/v5 where
	// the type has no Validate), Reference jsonschema/v5's on its own.
	Valid, Generated, Reference bool
	// Validated is true when the generated Validate decided, false when
	// the type falls back to jsonschema/v5.
	Validated bool `json:"validated"`
	// Error is the generated path's error, when it refused the data.
	Error string `json:"error,omitempty"`
	// RoundTrip is the JSON the generated type encodes data it accepted
	// back to, when that is another JSON value than data (numbers compare
	// by value).
	RoundTrip string `json:"roundTrip,omitempty"`
}

// Load reads a test file of the suite.
func Load(path string) ([]Group, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var groups []Group
	if err := json.Unmarshal(data, &groups); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return groups, nil
}

// MessageName is the name of group i's message in its contract.
func MessageName(i int) string { return "G" + strconv.Itoa(i) }

// Run runs every test of every generated group and prints one verdict a
// line. It fails only when the data cannot be read: whether a verdict is
// right is the caller's business (it knows the differences allowed).
func Run(t *testing.T, cases []Case) {
	for _, c := range cases {
		groups, err := Load(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		for gi, g := range groups {
			name := MessageName(gi)
			newValue, ok := c.New[name]
			if !ok {
				continue // refused by the generator
			}
			for ti, test := range g.Tests {
				v := Verdict{Draft: c.Draft, File: c.File, Group: gi, Test: ti, Valid: test.Valid}
				value := newValue()
				genErr, validated := decodeMessage(c.Contract, name, test.Data, value)
				v.Generated, v.Validated = genErr == nil, validated
				if genErr != nil {
					v.Error = genErr.Error()
				} else {
					v.RoundTrip = roundTrip(test.Data, value)
				}
				v.Reference = c.Contract.ValidateJSON(name, test.Data) == nil
				line, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Printf("suite: %s\n", line)
			}
		}
	}
}

// roundTrip encodes the decoded value and returns what it wrote when it is
// another JSON value than data ("" when it is the same).
func roundTrip(data []byte, value any) string {
	out, err := json.Marshal(value)
	if err != nil {
		return "encoding fails: " + err.Error()
	}
	a, errA := jsonvalue.Decode(data)
	b, errB := jsonvalue.Decode(out)
	if errA != nil || errB != nil || !jsonvalue.Same(a, b, jsonvalue.Equal) {
		return string(out)
	}
	return ""
}

// decodeMessage decodes and validates data into v as the runtime's server
// does (framework's decodeMessage): a type with a generated Validate
// decodes itself and validates the Go value; any other is validated by
// jsonschema/v5 first. It reports whether the generated Validate decided.
func decodeMessage(c *framework.Contract, name string, data []byte, v any) (err error, validated bool) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if val, ok := v.(framework.Validator); ok {
		if u, ok := v.(json.Unmarshaler); ok {
			err = u.UnmarshalJSON(data)
		} else {
			err = json.Unmarshal(data, v)
		}
		if err == nil {
			err = val.Validate()
		}
		return err, true
	}
	if err := c.ValidateJSON(name, data); err != nil {
		return err, false
	}
	return json.Unmarshal(data, v), false
}
