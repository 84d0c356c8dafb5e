package formats

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Formats]("Formats", `{"at": "2026-11-30T05:00:00Z"}`,
			`{"at": "2026-11-30T05:00:00.123456789+02:00", "maybeAt": null, "day": "2026-11-30", "id": "7f3a1b2c-1d2e-4f5a-8b9c-0d1e2f3a4b5c",
			  "mail": "a@example.com", "small": -2147483648, "big": 18446744073709551615, "ratio": 0.25, "plain": 1e-7, "count": 0, "history": []}`,
			`{"at": "2026-11-30T05:00:00Z", "maybeAt": "2026-12-01T00:00:00Z", "history": ["2026-01-01T00:00:00Z"]}`,
			`{"at": "1990-12-31T15:59:60-08:00", "history": ["2026-11-30t05:00:00z"]}`),
	)
}
