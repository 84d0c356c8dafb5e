package typearrays

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"nullableString": null, "stringOrNumber": "s", "intStringOrNull": null, "objectOrNull": null, "numberOrInteger": 1}`,
		`{"nullableString": "", "stringOrNumber": 1.5, "intStringOrNull": 3, "objectOrNull": {"a": 1}, "numberOrInteger": 2.5}`,
		`{"intStringOrNull": "three", "objectOrNull": {}}`,
	} {
		roundtrip.Check[Types](t, Contract, "Types", in)
	}
	v := roundtrip.Check[Types](t, Contract, "Types", `{"stringOrNumber": 2, "intStringOrNull": null}`)
	if n, err := v.StringOrNumber.AsNumber(); err != nil || n != 2 {
		t.Errorf("stringOrNumber: %v %v", n, err)
	}
	if !v.IntStringOrNull.IsNull() {
		t.Errorf("intStringOrNull: %v", v.IntStringOrNull)
	}
}
