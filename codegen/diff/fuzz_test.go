package diff_test

import (
	"encoding/json"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/diff"
)

// fuzzSeeds are schemas that reach every part of the comparison; each is
// paired with every other as a seed.
var fuzzSeeds = []string{
	`true`, `false`, `{}`, `{"type":["string","null"],"maxLength":3}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","minimum":1,"exclusiveMinimum":true,"items":[{}],"additionalItems":false}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"properties":{"x":{"$ref":"#"}}}},"$ref":"#/definitions/a"}`,
	`{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"properties":{"n":{"$recursiveRef":"#"}}}`,
	`{"$dynamicAnchor":"n","properties":{"n":{"$dynamicRef":"#n"}},"unevaluatedProperties":false}`,
	`{"anyOf":[{"type":"string"},{"type":"null"}],"oneOf":[{"const":1},{"enum":[1,2]}],"allOf":[{"not":{"const":0}}]}`,
	`{"if":{"required":["a"]},"then":{"minProperties":2},"else":{"maxProperties":1},"dependentSchemas":{"a":{"required":["b"]}}}`,
	`{"patternProperties":{"^x":{"type":"integer","multipleOf":0.5}},"propertyNames":{"maxLength":9},"additionalProperties":{"$ref":"#"}}`,
	`{"prefixItems":[{"format":"date"}],"items":{"contentEncoding":"base64"},"contains":{"pattern":"a"},"minContains":0,"uniqueItems":true}`,
}

func FuzzCompare(f *testing.F) {
	for _, oldSchema := range fuzzSeeds {
		for _, newSchema := range fuzzSeeds {
			f.Add([]byte(oldSchema), []byte(newSchema))
		}
	}
	for _, row := range schemaPairs {
		f.Add([]byte(row.old), []byte(row.new))
	}
	f.Fuzz(func(t *testing.T, oldSchema, newSchema []byte) {
		for _, dir := range []diff.Direction{diff.Request, diff.Response, diff.Both} {
			changes, err := diff.Compatible(oldSchema, newSchema, dir)
			if err != nil {
				continue
			}
			for _, change := range changes {
				if change.Kind == "" || change.Message == "" {
					t.Fatalf("change without kind or message: %+v", change)
				}
			}
		}
		// A schema compared with itself has no change.
		if changes, err := diff.Compatible(oldSchema, oldSchema, diff.Both); err == nil {
			for _, change := range changes {
				if change.Kind != diff.KindTooComplex {
					t.Fatalf("schema differs from itself: %+v\nschema: %s", change, oldSchema)
				}
			}
		}
	})
}

func TestCompatibleWithItself(t *testing.T) {
	t.Parallel()
	var schemas []string
	schemas = append(schemas, fuzzSeeds...)
	for _, row := range schemaPairs {
		schemas = append(schemas, row.old, row.new)
	}
	for _, schema := range schemas {
		changes, err := diff.Compatible(json.RawMessage(schema), json.RawMessage(schema), diff.Both)
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		if len(changes) != 0 {
			t.Errorf("%s differs from itself: %s", schema, describe(changes))
		}
	}
}
