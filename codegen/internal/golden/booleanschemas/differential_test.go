package booleanschemas

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Booleans]("Booleans", `{}`, `{"anything": null, "list": [1, "a", null, {}], "open": {"k": [true]}}`,
			`{"anything": {"deep": [1, 2]}}`),
		difftest.For[Anything]("Anything", `null`, `1`, `"s"`, `{"a": [null]}`),
	)
}
