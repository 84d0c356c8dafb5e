package booleanschemas

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"anything": null, "list": [1, "a", null, {}], "open": {"k": [true]}}`,
		`{"anything": {"deep": [1, 2]}}`,
	} {
		roundtrip.Check[Booleans](t, Contract, "Booleans", in)
	}
	for _, in := range []string{`null`, `1`, `"s"`, `{"a": [null]}`} {
		roundtrip.Check[Anything](t, Contract, "Anything", in)
	}
	if err := Contract.ValidateJSON("Booleans", []byte(`{"never": 1}`)); err == nil {
		t.Error("a member whose schema is false validated")
	}
}
