package refs

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

const order = `{"id": "o1", "customer": {"name": "Ada", "address": {"city": "London"}}, "lines": [{"sku": "s", "price": {"amount": 100, "currency": "EUR"}}]}`

func TestRoundTrip(t *testing.T) {
	roundtrip.Check[Order](t, Contract, "Order", order)
	r := roundtrip.Check[Receipt](t, Contract, "Receipt", `{"order": `+order+`, "total": {"amount": 100, "currency": "EUR"},
		"address": {"street": "1 Main St"}, "legacy": "X-1", "note": {"text": "hi", "by": {"name": "Bob"}}, "anchored": "GBP"}`)
	if r.Order.Customer.Address.City == nil || *r.Legacy != "X-1" || *r.Anchored != "GBP" {
		t.Errorf("decoded %+v", r)
	}
	roundtrip.Check[Receipt](t, Contract, "Receipt", `{"order": `+order+`, "total": {"amount": 0, "currency": "USD"}}`)
}

// TestDraft07RefIgnoresSiblings checks that the draft-07 file's "type":
// "integer" beside $ref was dropped, as draft-07 ignores it.
func TestDraft07RefIgnoresSiblings(t *testing.T) {
	if err := Contract.ValidateJSON("Receipt", []byte(`{"order": `+order+`, "total": {"amount": 1, "currency": "EUR"}, "legacy": "ABC"}`)); err != nil {
		t.Fatal(err)
	}
	if err := Contract.ValidateJSON("Receipt", []byte(`{"order": `+order+`, "total": {"amount": 1, "currency": "EUR"}, "legacy": "TOO-LONG-CODE"}`)); err == nil {
		t.Fatal("maxLength of the referenced draft-07 schema was not applied")
	}
}
