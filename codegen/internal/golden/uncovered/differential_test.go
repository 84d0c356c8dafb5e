package uncovered

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders, and the runtime's
// jsonschema/v5 validation of these messages, with jsonschema/v5 on a
// corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Floats]("Floats", `{"ratio": 0.5, "count": 3}`, `{}`),
		difftest.For[Times]("Times", `{"at": "2026-12-01T18:30:00Z", "name": "node-1"}`, `{}`),
		difftest.For[UniqueObjects]("UniqueObjects", `{"labels": [{"key": "a", "value": "1"}, {"key": "b"}], "names": ["x", "y"]}`, `{}`),
		difftest.For[Pair]("Pair", `[1, 2]`, `[3, 1]`),
		difftest.For[ObjectEnum]("ObjectEnum", `{"a": 1}`, `{"a": 2}`),
		difftest.For[Unevaluated]("Unevaluated", `{"a": 1, "b": "x"}`, `{}`),
	)
}
