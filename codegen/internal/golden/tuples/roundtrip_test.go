package tuples

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"pair": ["a", 1], "point": [1.5, -2], "headed": ["h"], "legacy": []}`,
		`{"point": [0, 0, null], "headed": ["h", true, false], "legacy": ["x", {"n": 1}]}`,
		`{"point": [0, 0, "origin"], "legacy": ["x"]}`,
	} {
		roundtrip.Check[Tuples](t, Contract, "Tuples", in)
	}
	v := roundtrip.Check[Tuples](t, Contract, "Tuples", `{"point": [3, 4, null]}`)
	if v.Point.Item0 != 3 || v.Point.Item1 != 4 || !v.Point.Item2.IsNull() {
		t.Errorf("decoded %+v", v.Point)
	}
}

func TestTupleErrors(t *testing.T) {
	var p TuplesPair
	if err := p.UnmarshalJSON([]byte(`["a", 1, 2]`)); err == nil {
		t.Error("a third element decoded into a pair that allows two")
	}
	var l Legacy
	l.Item1 = &LegacyItem1{}
	if _, err := l.MarshalJSON(); err == nil {
		t.Error("a tuple with a hole encoded")
	}
}
