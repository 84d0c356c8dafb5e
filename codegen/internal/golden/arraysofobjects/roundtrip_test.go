package arraysofobjects

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"inline": [], "referenced": [], "matrix": [], "nullableItems": [], "anyItems": [], "named": []}`,
		`{"inline": [{"name": "a"}, {"name": "b", "weight": 1.5}], "referenced": [{"id": 1, "tags": []}, {"id": 2}],
		  "matrix": [[1, 2], [], [3]], "nullableItems": [1, null, 0], "anyItems": [1, "x", {"y": null}, null], "named": ["a", "b"]}`,
	} {
		roundtrip.Check[Arrays](t, Contract, "Arrays", in)
	}
	roundtrip.Check[Item](t, Contract, "Item", `{"id": 9, "tags": ["x"]}`)
}
