package recursion

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Tree]("Tree", `{"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4, "children": []}]}`),
		difftest.For[List]("List", `{"head": "a", "next": {"head": "b", "next": null}}`),
		difftest.For[Expr]("Expr", `{"op": "+", "left": {"expr": {"op": "lit", "left": {"literal": 1}}}, "right": {"literal": 2, "expr": null}}`,
			`{"op": "x", "left": null}`),
		difftest.For[Term]("Term", `{}`, `{"expr": {"op": "-", "right": {}}, "literal": 1.5}`),
	)
}
