package enumkeys

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Usage]("Usage", `{}`,
			`{"requests": {"cpu": 2, "gpu": 1}, "limits": {"memory": "1024"}, "phases": {"Pending": "a", "Done": "b"},
			  "nested": {"pod-1": {"cpu": 0.5}}, "patterned": {"abc": true}, "defaulted": {"memory": 3}}`),
	)
}
