package arraysofobjects

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Arrays]("Arrays", `{}`,
			`{"inline": [], "referenced": [], "matrix": [], "nullableItems": [], "anyItems": [], "named": []}`,
			`{"inline": [{"name": "a"}, {"name": "b", "weight": 1.5}], "referenced": [{"id": 1, "tags": []}, {"id": 2}],
			  "matrix": [[1, 2], [], [3]], "nullableItems": [1, null, 0], "anyItems": [1, "x", {"y": null}, null], "named": ["a", "b"]}`),
		difftest.For[Item]("Item", `{"id": 9, "tags": ["x"]}`),
	)
}
