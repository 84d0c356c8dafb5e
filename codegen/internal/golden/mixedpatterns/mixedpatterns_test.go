package mixedpatterns

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Msg]("Msg", `{}`, `{"id": "x", "n-a": 1, "s-b": "t", "other": true}`),
		difftest.For[Open]("Open", `{}`, `{"id": "x", "x-a": {"a": 1}, "other": [1, "two"]}`))
}

func TestRoundTrip(t *testing.T) {
	v := roundtrip.Check[Msg](t, Contract, "Msg", `{"id": "x", "n-a": 1, "s-b": "t", "other": true}`)
	if string(v.AdditionalProperties["n-a"]) != "1" || string(v.AdditionalProperties["s-b"]) != `"t"` || string(v.AdditionalProperties["other"]) != "true" {
		t.Errorf("undeclared members: %v", v.AdditionalProperties)
	}
	for _, in := range []string{`{"n-a": "1"}`, `{"s-b": 2}`, `{"other": "x"}`} {
		if err := Contract.ValidateJSON("Msg", []byte(in)); err == nil {
			t.Errorf("%s: valid", in)
		}
	}
	roundtrip.Check[Open](t, Contract, "Open", `{"x-a": {"a": 1, "b": null}, "y": null}`)
}
