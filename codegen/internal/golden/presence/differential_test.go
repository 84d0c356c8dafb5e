package presence

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Presence]("Presence", "{"+required+"}",
			"{"+required+`, "optString": "", "optNullString": null, "optObject": {"x": 1, "y": 2}, "optNullObject": null,
			  "optList": [], "optNullList": null, "optMap": {}, "optNullMap": null, "optInt": 0, "optNullInt": null, "optBool": false, "optRaw": null}`,
			"{"+required+`, "optNullString": "s", "optNullObject": {"x": 1, "y": 2}, "optNullList": [], "optNullMap": {"a": 1},
			  "optNullInt": 0, "optRaw": {"any": ["thing"]}}`),
		difftest.For[Point]("Point", `{"x": 1, "y": 2.5}`),
	)
}
