package maps

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"labels": {}, "counts": {}, "nested": {}, "objects": {}, "nullableValues": {}, "anything": {}, "empty": {}, "named": {}}`,
		`{"labels": {"a": "b"}, "counts": {"x": 1, "y": -2}, "nested": {"o": {"pi": 3.14}}, "objects": {"k": {"id": "1"}},
		  "nullableValues": {"set": "v", "unset": null}, "anything": {"a": [1, "two", null]}, "named": {"n": "v"}}`,
	} {
		roundtrip.Check[Maps](t, Contract, "Maps", in)
	}
	m := roundtrip.Check[Maps](t, Contract, "Maps", `{"nullableValues": {"unset": null}}`)
	if v, ok := m.NullableValues["unset"]; !ok || v != nil {
		t.Errorf("null map value decoded as %v, %v", v, ok)
	}
}
