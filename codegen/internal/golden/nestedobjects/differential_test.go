package nestedobjects

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Outer]("Outer", `{"name": "a", "inner": {"deep": {}}}`,
			`{"name": "a", "inner": {"deep": {"value": 0}, "label": ""}}`,
			`{"name": "a", "inner": {"deep": {"value": 7}}, "open": {"known": "k", "extra": [1, {"x": null}], "z": null}}`),
	)
}
