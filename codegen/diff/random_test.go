package diff_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/diff"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schemaGenerator writes small random schemas and values from a fixed
// vocabulary, so that random pairs share property names, patterns and
// values often enough to matter.
type schemaGenerator struct{ rand *rand.Rand }

var (
	randomNames    = []string{"a", "b", "c", "x1"}
	randomTypes    = []string{"null", "boolean", "integer", "number", "string", "array", "object"}
	randomPatterns = []string{"^a", "b$", "^[a-c]+$"}
	randomScalars  = []any{nil, true, false, 0, 1, 2, -3, 1.5, "", "a", "b", "ab", "2020-01-02", map[string]any{"a": 1}, []any{"a"}}
)

func (g schemaGenerator) pick(n int) int        { return g.rand.IntN(n) }
func (g schemaGenerator) chance(p float64) bool { return g.rand.Float64() < p }

func (g schemaGenerator) schema(depth int) any {
	if depth <= 0 || g.chance(0.1) {
		if g.chance(0.2) {
			return g.chance(0.7)
		}
		return map[string]any{"type": randomTypes[g.pick(len(randomTypes))]}
	}
	s := map[string]any{}
	keywords := 1 + g.pick(3)
	for range keywords {
		switch g.pick(24) {
		case 0:
			s["type"] = randomTypes[g.pick(len(randomTypes))]
		case 1:
			s["type"] = []any{randomTypes[g.pick(len(randomTypes))], randomTypes[g.pick(len(randomTypes))]}
		case 2:
			s["enum"] = []any{g.scalar(), g.scalar(), g.scalar()}
		case 3:
			s["const"] = g.scalar()
		case 4:
			s[[]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}[g.pick(4)]] = g.pick(5) - 2
		case 5:
			s["multipleOf"] = []any{1, 2, 0.5}[g.pick(3)]
		case 6:
			s[[]string{"minLength", "maxLength"}[g.pick(2)]] = g.pick(4)
		case 7:
			s["pattern"] = randomPatterns[g.pick(len(randomPatterns))]
		case 8:
			s["format"] = []string{"date", "date-time"}[g.pick(2)]
		case 9, 10:
			properties := map[string]any{}
			for range 1 + g.pick(2) {
				properties[randomNames[g.pick(len(randomNames))]] = g.schema(depth - 1)
			}
			s["properties"] = properties
		case 11:
			s["required"] = []any{randomNames[g.pick(len(randomNames))]}
		case 12:
			if g.chance(0.5) {
				s["additionalProperties"] = g.chance(0.5)
			} else {
				s["additionalProperties"] = g.schema(depth - 1)
			}
		case 13:
			s["patternProperties"] = map[string]any{"^x": g.schema(depth - 1)}
		case 14:
			s[[]string{"minProperties", "maxProperties", "minItems", "maxItems"}[g.pick(4)]] = g.pick(3)
		case 15:
			s["items"] = g.schema(depth - 1)
		case 16:
			s["prefixItems"] = []any{g.schema(depth - 1)}
		case 17:
			switch g.pick(4) {
			case 0:
				s["uniqueItems"] = true
			case 1:
				s["contains"] = g.schema(depth - 1)
			case 2:
				s["propertyNames"] = map[string]any{"pattern": "^[ab]"}
			default:
				s["not"] = g.schema(depth - 1)
			}
		case 18, 19:
			var list []any
			for range 1 + g.pick(3) {
				list = append(list, g.schema(depth-1))
			}
			s[[]string{"allOf", "anyOf", "oneOf"}[g.pick(3)]] = list
		case 20:
			s["if"], s["then"] = g.schema(depth-1), g.schema(depth-1)
			if g.chance(0.5) {
				s["else"] = g.schema(depth - 1)
			}
		case 21:
			s["dependentRequired"] = map[string]any{randomNames[g.pick(len(randomNames))]: []any{randomNames[g.pick(len(randomNames))]}}
		case 22:
			// Recursion: invalid at the root (a reference loop), which the
			// test skips, and a recursive schema below it.
			s["$ref"] = "#"
		case 23:
			s["$defs"] = map[string]any{"d": g.schema(depth - 1)}
			s["properties"] = map[string]any{randomNames[g.pick(len(randomNames))]: map[string]any{"$ref": "#/$defs/d"}}
		}
	}
	return s
}

func (g schemaGenerator) scalar() any { return randomScalars[g.pick(len(randomScalars))] }

func (g schemaGenerator) value(depth int) any {
	switch {
	case depth <= 0 || g.chance(0.5):
		return g.scalar()
	case g.chance(0.5):
		var list []any
		for range g.pick(3) {
			list = append(list, g.value(depth-1))
		}
		return append([]any{}, list...)
	default:
		object := map[string]any{}
		for range g.pick(3) {
			object[randomNames[g.pick(len(randomNames))]] = g.value(depth - 1)
		}
		return object
	}
}

// mutate returns a copy of a schema with one keyword somewhere replaced,
// added or removed.
func (g schemaGenerator) mutate(schema any, depth int) any {
	object, ok := schema.(map[string]any)
	if !ok || g.chance(0.15) {
		return g.schema(depth)
	}
	copied := map[string]any{}
	for key, value := range object {
		copied[key] = value
	}
	var nested []string
	for key, value := range copied {
		switch value.(type) {
		case map[string]any, bool:
			if key != "properties" && key != "patternProperties" && key != "dependentRequired" {
				nested = append(nested, key)
			}
		}
	}
	if len(nested) > 0 && g.chance(0.5) {
		key := nested[g.pick(len(nested))]
		copied[key] = g.mutate(copied[key], depth-1)
		return copied
	}
	if extra, ok := g.schema(1).(map[string]any); ok {
		for key, value := range extra {
			copied[key] = value
		}
	}
	if g.chance(0.3) {
		for key := range copied {
			delete(copied, key)
			break
		}
	}
	return copied
}

func compileValue(schema any) (*jsonschema.Schema, []byte, error) {
	encoded, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.Draft = jsonschema.Draft2020
	compiler.AssertFormat = true
	if err := compiler.AddResource("https://lockstep.invalid/random.json", strings.NewReader(string(encoded))); err != nil {
		return nil, nil, err
	}
	compiled, err := compiler.Compile("https://lockstep.invalid/random.json")
	return compiled, encoded, err
}

// TestVerdictsAgreeWithValidationOnRandomSchemas is a differential test of
// the verdicts against the reference validator on random schema pairs (a
// schema and a mutation of it) and random values: whenever a value is valid
// under one side only, the direction it distinguishes must be breaking,
// unless a property that one side leaves undeclared is involved (which
// generated peers never send). Each schema must also equal itself. The
// pseudo-random sequence is fixed.
func TestVerdictsAgreeWithValidationOnRandomSchemas(t *testing.T) {
	t.Parallel()
	g := schemaGenerator{rand.New(rand.NewPCG(1, 2))}
	const pairs, values = 500, 40
	checked := 0
	for range pairs {
		oldValue := g.schema(3)
		newValue := g.mutate(oldValue, 3)
		oldSchema, oldJSON, err := compileValue(oldValue)
		if err != nil {
			continue
		}
		newSchema, newJSON, err := compileValue(newValue)
		if err != nil {
			continue
		}
		if same, err := diff.Compatible(oldJSON, oldJSON, diff.Both); err != nil || len(same) != 0 {
			t.Fatalf("%s compared with itself: %v%s", oldJSON, err, describe(same))
		}
		verdicts := map[diff.Direction][]diff.Change{}
		for _, dir := range []diff.Direction{diff.Request, diff.Response} {
			changes, err := diff.Compatible(oldJSON, newJSON, dir)
			if err != nil {
				t.Fatalf("Compatible(%s, %s): %v", oldJSON, newJSON, err)
			}
			verdicts[dir] = changes
		}
		for range values {
			value := g.value(2)
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
			checked++
			excused := false
			for _, change := range verdicts[dir] {
				excused = excused || change.Breaking || undeclaredKinds[change.Kind]
			}
			if !excused {
				witness, _ := json.Marshal(value)
				t.Fatalf("%s\n  -> %s\n%s is valid only under the %s schema, yet no %s change is breaking:%s",
					oldJSON, newJSON, witness, map[bool]string{true: "old", false: "new"}[oldValid], dir, describe(verdicts[dir]))
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d distinguishing values checked; the generator needs work", checked)
	}
}
