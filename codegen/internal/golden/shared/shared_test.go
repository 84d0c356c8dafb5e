package shared

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

const full = `{"id": "o1",
  "billing": {"street": "Main 1", "zone": "north"},
  "shipping": {"street": "Side 2"},
  "returns": [{"street": "Back 3", "zone": "south"}, {"street": "Back 4"}],
  "pickup": {"street": "Dock 5", "zone": "south"},
  "office": {"street": "Tower 6"},
  "depot": {"street": "Yard 7"},
  "warehouse": {"street": "Hall 8", "zone": "north"},
  "origin": {"host": "a.example", "port": 443},
  "destination": {"host": "b.example"},
  "hops": [{"host": "c.example", "port": 8080}]}`

// TestSharedTypes checks which members share a Go type: the ones whose
// schemas are identical, and no others.
func TestSharedTypes(t *testing.T) {
	order := reflect.TypeFor[Order]()
	typeOf := func(field string) reflect.Type {
		f, ok := order.FieldByName(field)
		if !ok {
			t.Fatalf("Order has no field %s", field)
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		return ft
	}
	for _, c := range []struct {
		field, want string
	}{
		{"Billing", "OrderBilling"},
		{"Shipping", "OrderBilling"},
		{"Returns", "OrderBilling"},
		{"Pickup", "OrderPickup"},
		{"Office", "OrderOffice"},
		{"Depot", "OrderDepot"},
		{"Warehouse", "Warehouse"},
		{"Origin", "Endpoint"},
		{"Destination", "Endpoint"},
		{"Hops", "Endpoint"},
	} {
		if got := typeOf(c.field).Name(); got != c.want {
			t.Errorf("Order.%s is a %s, want %s", c.field, got, c.want)
		}
	}
	// The zone enum is shared by every address whose zone schema is the
	// same, also where the address itself is not; the depot's has a
	// default, so it is a type of its own.
	zone := func(ty reflect.Type) string {
		f, _ := ty.FieldByName("Zone")
		return f.Type.Elem().Name()
	}
	for _, ty := range []reflect.Type{reflect.TypeFor[OrderBilling](), reflect.TypeFor[OrderPickup](), reflect.TypeFor[OrderOffice](), reflect.TypeFor[Warehouse]()} {
		if got := zone(ty); got != "OrderBillingZone" {
			t.Errorf("%s.Zone is a %s, want OrderBillingZone", ty.Name(), got)
		}
	}
	if got := zone(reflect.TypeFor[OrderDepot]()); got != "OrderDepotZone" {
		t.Errorf("OrderDepot.Zone is a %s, want OrderDepotZone", got)
	}
	if got := (&OrderDepot{}).GetZone(); got != OrderDepotZoneNorth {
		t.Errorf("OrderDepot's default zone is %q, want north", got)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{`{"id": "o0"}`, full} {
		roundtrip.Check[Order](t, Contract, "Order", in)
	}
}

// TestSharedChecks checks that a shared type's checks are the ones of
// each schema it stands for: the limits of the billing address hold for
// the shipping address and the returns too, and the pickup's own are
// kept.
func TestSharedChecks(t *testing.T) {
	long := strings.Repeat("x", 30)
	for _, c := range []struct {
		in, want string // want: "" for valid, else the error's text
	}{
		{`{"id": "o", "shipping": {"street": "` + long + `"}}`, ""},
		{`{"id": "o", "pickup": {"street": "` + long + `"}}`, "/pickup/street: length must be <= 20"},
		{`{"id": "o", "returns": [{"street": "s", "zone": "east"}]}`, "/returns/0/zone: value must be one of"},
		{`{"id": "o", "hops": [{"host": ""}]}`, "/hops/0/host: length must be >= 1"},
		{`{"id": "o", "origin": {"host": "h", "port": 0}}`, "/origin/port: must be >= 1"},
	} {
		var o Order
		if err := o.UnmarshalJSON([]byte(c.in)); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		err := o.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1}, difftest.For[Order]("Order", `{"id": "o0"}`, full))
}
