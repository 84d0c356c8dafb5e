package typearrays

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Types]("Types", `{}`,
			`{"nullableString": null, "stringOrNumber": "s", "intStringOrNull": null, "objectOrNull": null, "numberOrInteger": 1}`,
			`{"nullableString": "", "stringOrNumber": 1.5, "intStringOrNull": 3, "objectOrNull": {"a": 1}, "numberOrInteger": 2.5}`,
			`{"intStringOrNull": "three", "objectOrNull": {}}`),
	)
}
