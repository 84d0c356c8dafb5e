package v1

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Item]("Item", `{"sku": "a", "quantity": 0}`,
			`{"sku": "c", "quantity": 1, "tags": ["x"], "attributes": {"k": "v"}, "note": null, "dimensions": {"width": 1.5}, "kind": "physical", "code": "X-1"}`,
			`{"sku": "b", "quantity": 3, "price": {"amount": 250, "currency": "EUR"}, "code": 7}`),
		difftest.For[Receipt]("Receipt", `{"accepted": true, "at": "2026-11-30T05:00:00Z"}`),
	)
}
