package tuples

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Tuples]("Tuples", `{}`, `{"pair": ["a", 1], "point": [1.5, -2], "headed": ["h"], "legacy": []}`,
			`{"point": [0, 0, null], "headed": ["h", true, false], "legacy": ["x", {"n": 1}]}`,
			`{"point": [0, 0, "origin"], "legacy": ["x"]}`),
	)
}
