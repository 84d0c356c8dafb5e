package alloftypes

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

// TestDifferential compares the generated path with jsonschema/v5: members
// whose schema admits no value are refused whatever they hold.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Msg]("Msg", `{}`, `{"name": "a"}`))
}

func TestRefusesEveryValue(t *testing.T) {
	roundtrip.Check[Msg](t, Contract, "Msg", `{"name": "a"}`)
	for _, in := range []string{`{"never": "a"}`, `{"never": 1}`, `{"never": null}`, `{"nothing": "a"}`} {
		if err := Contract.ValidateJSON("Msg", []byte(in)); err == nil {
			t.Errorf("%s: valid", in)
		}
	}
}
