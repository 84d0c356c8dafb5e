package maps

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Maps]("Maps", `{}`,
			`{"labels": {}, "counts": {}, "nested": {}, "objects": {}, "nullableValues": {}, "anything": {}, "empty": {}, "named": {}}`,
			`{"labels": {"a": "b"}, "counts": {"x": 1, "y": -2}, "nested": {"o": {"pi": 3.14}}, "objects": {"k": {"id": "1"}},
			  "nullableValues": {"set": "v", "unset": null}, "anything": {"a": [1, "two", null]}, "named": {"n": "v"}}`),
	)
}
