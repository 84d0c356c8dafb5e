package defaults

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Settings]("Settings", `{"required": 1}`,
			`{"required": 1, "replicas": 0, "enabled": false, "fallback": "x", "tags": []}`,
			`{"required": -3, "ratio": 0.25, "name": "n", "mode": "fast", "labels": {"a": "b"}, "limits": {"cpu": "1"}, "fallback": null, "since": "2024-01-02T03:04:05Z"}`),
	)
}
