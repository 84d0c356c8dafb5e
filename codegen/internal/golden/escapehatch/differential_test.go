package escapehatch

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Escapes]("Escapes", `{"addr": "10.0.0.1", "prefixes": ["10.0.0.0/8", "fd00::/8"], "pod": {"spec": {"containers": []}}, "count": 2, "raw": [null]}`,
			`{"pod": {}, "raw": null}`),
	)
}
