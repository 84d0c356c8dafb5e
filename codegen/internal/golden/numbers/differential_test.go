package numbers

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances: multipleOf with a
// fractional step on float64 members, "integer" checked on numbers inside
// not and if, and members only the map of other members holds.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Numbers]("Numbers", `{}`,
			`{"price": 19.99, "step": -10, "fraction": 0.5, "signed": 3}`,
			`{"price": 0.07, "step": 10, "fraction": -2.25, "signed": -0.5}`,
			`{"price": 1e2, "step": 2.5, "signed": 0}`),
		difftest.For[Labels]("Labels", `{"name": "n"}`,
			`{"name": "n", "owner": "o", "team": "t"}`,
			`{"name": "n", "legacy": "yes", "migratedTo": "v2", "zone": "a"}`),
	)
}

// TestVerdicts pins verdicts the differential corpus may not reach: the
// float steps at the edge of exactness and members of the map of others.
func TestVerdicts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		msg, doc string
		ok       bool
	}{
		{"Numbers", `{"price": 0.3}`, true},
		{"Numbers", `{"price": 0.305}`, false},
		{"Numbers", `{"step": 1.25}`, false},
		{"Numbers", `{"step": 10.5}`, false},
		{"Numbers", `{"fraction": 2}`, false},
		{"Numbers", `{"fraction": 2.5}`, true},
		{"Numbers", `{"signed": -1}`, false},
		{"Numbers", `{"signed": 1.5}`, false},
		{"Numbers", `{"signed": -1.5}`, true},
		{"Labels", `{"name": "n", "owner": "o"}`, false},
		{"Labels", `{"name": "n", "legacy": "y"}`, false},
		{"Labels", `{"name": "n", "zone": ""}`, false},
		{"Labels", `{"name": "n", "team": "t"}`, true},
	} {
		var m interface{ Validate() error }
		switch c.msg {
		case "Numbers":
			m = new(Numbers)
		default:
			m = new(Labels)
		}
		if err := m.(interface{ UnmarshalJSON([]byte) error }).UnmarshalJSON([]byte(c.doc)); err != nil {
			t.Fatalf("%s %s: %v", c.msg, c.doc, err)
		}
		generated := m.Validate()
		schema := Contract.ValidateJSON(c.msg, []byte(c.doc))
		if (generated == nil) != c.ok || (schema == nil) != c.ok {
			t.Errorf("%s %s: generated Validate %v, jsonschema/v5 %v, want valid %v", c.msg, c.doc, generated, schema, c.ok)
		}
	}
}
