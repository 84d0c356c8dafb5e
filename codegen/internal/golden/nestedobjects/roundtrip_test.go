package nestedobjects

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"name": "a", "inner": {"deep": {}}}`,
		`{"name": "a", "inner": {"deep": {"value": 0}, "label": ""}}`,
		`{"name": "a", "inner": {"deep": {"value": 7}}, "open": {"known": "k", "extra": [1, {"x": null}], "z": null}}`,
	} {
		roundtrip.Check[Outer](t, Contract, "Outer", in)
	}
}

// TestOpenObjectMembers checks that undeclared members are kept, and that
// matching declared names is exact: a differently cased name is undeclared.
func TestOpenObjectMembers(t *testing.T) {
	o := roundtrip.Check[Outer](t, Contract, "Outer", `{"name": "a", "inner": {"deep": {}}, "open": {"known": "k", "Known": "x"}}`)
	if o.Open.Known == nil || *o.Open.Known != "k" || string(o.Open.AdditionalProperties["Known"]) != `"x"` {
		t.Errorf("open = %+v", o.Open)
	}
	o.Open.AdditionalProperties["known"] = []byte("1")
	if _, err := o.Open.MarshalJSON(); err == nil {
		t.Error("an undeclared member named like a declared one encoded")
	}
}
