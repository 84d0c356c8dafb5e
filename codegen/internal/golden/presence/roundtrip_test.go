package presence

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

const required = `"reqString": "", "reqNullString": null, "reqObject": {"x": 0, "y": 0}, "reqNullObject": null, "reqList": [], "reqNullList": null`

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		"{" + required + "}",
		"{" + required + `, "optString": "", "optNullString": null, "optObject": {"x": 1, "y": 2}, "optNullObject": null,
		  "optList": [], "optNullList": null, "optMap": {}, "optNullMap": null, "optInt": 0, "optNullInt": null, "optBool": false, "optRaw": null}`,
		"{" + required + `, "optNullString": "s", "optNullObject": {"x": 1, "y": 2}, "optNullList": [], "optNullMap": {"a": 1},
		  "optNullInt": 0, "optRaw": {"any": ["thing"]}}`,
	} {
		roundtrip.Check[Presence](t, Contract, "Presence", in)
	}
}

// TestAbsentNullZero checks the three states of an optional nullable member
// and of the others, decoded and encoded.
func TestAbsentNullZero(t *testing.T) {
	absent := roundtrip.Check[Presence](t, Contract, "Presence", "{"+required+"}")
	null := roundtrip.Check[Presence](t, Contract, "Presence", "{"+required+`, "optNullInt": null, "optRaw": null}`)
	zero := roundtrip.Check[Presence](t, Contract, "Presence", "{"+required+`, "optNullInt": 0, "optList": []}`)
	if !absent.OptNullInt.IsZero() || absent.OptRaw != nil || absent.OptList != nil {
		t.Errorf("absent: %+v", absent)
	}
	if !null.OptNullInt.IsNull() || string(null.OptRaw) != "null" {
		t.Errorf("null: %+v", null)
	}
	if v, ok := zero.OptNullInt.Get(); !ok || v != 0 || zero.OptList == nil || len(zero.OptList) != 0 {
		t.Errorf("zero: %+v", zero)
	}
	p := Presence{ReqList: []string{}, OptNullString: jsonwire.Null[string](), OptNullInt: jsonwire.Value[int64](0)}
	roundtrip.Encode(t, p, "{"+required+`, "optNullString": null, "optNullInt": 0}`)
}
