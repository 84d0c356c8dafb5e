package refs

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Order]("Order", order),
		difftest.For[Receipt]("Receipt", `{"order": `+order+`, "total": {"amount": 100, "currency": "EUR"},
			"address": {"street": "1 Main St"}, "legacy": "X-1", "note": {"text": "hi", "by": {"name": "Bob"}}, "anchored": "GBP"}`,
			`{"order": `+order+`, "total": {"amount": 0, "currency": "USD"}}`),
	)
}
