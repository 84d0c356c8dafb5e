package oneoftagged

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Shape]("Shape", `{"kind": "circle", "radius": 2}`, `{"kind": "square", "side": 1}`),
		difftest.For[Event]("Event", `{"type": "PodsMoved", "at": "2026-01-02T03:04:05Z", "pods": ["a"], "why": "extra"}`,
			`{"type": "NodeAdded", "at": "2026-01-02T03:04:05Z", "node": "n1"}`),
		difftest.For[Merge]("Merge", `{"type": "jq", "path": "a.json"}`, `{"type": "env", "vars": {"A": "b"}}`,
			`{"type": "http", "scheme": "Bearer", "bearerFormat": "JWT"}`, `{"type": "http", "scheme": "basic"}`),
	)
}
