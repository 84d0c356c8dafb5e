package patternprops

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Patterns]("Patterns", `{"env": {}, "limits": {"default": 1}, "extensible": {}}`,
			`{"env": {"HOME": "/root", "GO_PATH": "x"}, "limits": {"default": 1, "cpu": 2, "mem": 3}, "extensible": {"name": "n", "x-note": {"a": 1}, "other": null}}`),
	)
}
