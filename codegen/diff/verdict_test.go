package diff_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/diff"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// witnesses are small JSON values that exercise the table's schemas.
var witnesses = []string{
	`null`, `true`, `false`, `0`, `1`, `2`, `3`, `4`, `-1`, `0.5`, `1.5`, `100`, `50`,
	`""`, `"a"`, `"b"`, `"c"`, `"abc"`, `"abcdefghijk"`, `"A1"`, `"v1"`, `"v2"`, `"x"`,
	`"True"`, `"Unknown"`, `"2020-01-02"`, `"2020-01-02T03:04:05Z"`,
	`[]`, `[1]`, `[1,1]`, `[1.5]`, `["a"]`, `["a",1]`, `["a",1,2]`, `[1,2,3,4,5,6]`,
	`-3`, `{}`, `{"a":"x"}`, `{"a":1}`, `{"a":null}`, `{"b":"x"}`, `{"a":"x","b":"y"}`, `{"a":1,"b":2}`,
	`{"nodeName":"n"}`, `{"node":"n"}`, `{"x-a":"s"}`, `{"x-a":1.5}`, `{"x-a":2}`, `{"Ab":1}`,
	`{"kind":"a"}`, `{"kind":"b"}`, `{"kind":"a","n":1.5}`, `{"kind":"b","n":1}`,
	`{"c":"s"}`, `{"c":1}`, `{"x":1.5}`, `{"x":1}`, `{"name":"abcdefghij"}`, `{"name":"a","children":[{"name":"abcdefghij"}]}`,
	`{"a":{"b":"abc"}}`, `{"c":1,"a":2}`,
}

func compileForTest(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	compiler := jsonschema.NewCompiler()
	compiler.Draft = jsonschema.Draft2020
	compiler.AssertFormat = true
	if err := compiler.AddResource("https://lockstep.invalid/test.json", strings.NewReader(schema)); err != nil {
		t.Fatal(err)
	}
	compiled, err := compiler.Compile("https://lockstep.invalid/test.json")
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

// undeclaredKinds are the changes that the rule for undeclared properties
// lets pass: a witness may use a property one side does not declare, which
// generated peers never send.
var undeclaredKinds = map[diff.Kind]bool{
	diff.KindFieldAdded: true, diff.KindFieldRemoved: true,
	diff.KindPatternPropertyAdded: true, diff.KindPatternPropertyRemoved: true,
}

// TestVerdictsAgreeWithValidation checks every table row against the
// reference validator: when some witness is valid under the old schema and
// invalid under the new one, the request verdict must be breaking (and the
// reverse for responses), unless the difference is a property that one side
// leaves undeclared.
func TestVerdictsAgreeWithValidation(t *testing.T) {
	t.Parallel()
	for _, row := range schemaPairs {
		oldSchema, newSchema := compileForTest(t, row.old), compileForTest(t, row.new)
		for _, witness := range witnesses {
			var value any
			decoder := json.NewDecoder(strings.NewReader(witness))
			decoder.UseNumber()
			if err := decoder.Decode(&value); err != nil {
				t.Fatal(err)
			}
			oldValid, newValid := oldSchema.Validate(value) == nil, newSchema.Validate(value) == nil
			var dir diff.Direction
			switch {
			case oldValid && !newValid:
				dir = diff.Request
			case newValid && !oldValid:
				dir = diff.Response
			default:
				continue
			}
			changes, err := diff.Compatible(json.RawMessage(row.old), json.RawMessage(row.new), dir)
			if err != nil {
				t.Fatal(err)
			}
			excused := false
			for _, change := range changes {
				excused = excused || change.Breaking || undeclaredKinds[change.Kind]
			}
			if !excused {
				t.Errorf("%s: %s is valid only under the %s schema, yet no %s change is breaking: %s",
					row.name, witness, map[bool]string{true: "old", false: "new"}[oldValid], dir, describe(changes))
			}
		}
	}
}
