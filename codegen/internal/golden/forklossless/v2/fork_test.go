package v2

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/forklossless/v1"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

var items = []string{
	`{"sku": "a", "quantity": 0}`,
	`{"sku": "b", "quantity": 3, "price": {"amount": 250, "currency": "EUR"}, "tags": [], "attributes": {}, "note": null,
	  "dimensions": {}, "kind": "digital", "code": 7}`,
	`{"sku": "c", "quantity": 1, "tags": ["x", "y"], "attributes": {"k": "v"}, "note": "n", "dimensions": {"width": 1.5, "height": 2},
	  "kind": "physical", "code": "X-1"}`,
}

// sameJSON reports whether two encodings hold the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestRoundTrips converts 1.0.0 items up and back down, and 1.1.0 items
// down and back up, and finds them unchanged: the generated conversions
// lose nothing. Besides the items above, it takes every valid instance of
// the differential corpus of 1.0.0's Item.
func TestRoundTrips(t *testing.T) {
	corpus, err := difftest.Corpus(v1.Contract.Model().Schemas["Item"], items, 3, 60, 10)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, in := range corpus {
		if v1.Contract.ValidateJSON("Item", in) != nil {
			continue
		}
		var old v1.Item
		if err := json.Unmarshal(in, &old); err != nil {
			continue // valid, but a number beyond int64
		}
		up, err := itemFromV1(&old)
		if err != nil {
			t.Fatalf("%s up: %v", in, err)
		}
		if err := up.Validate(); err != nil {
			t.Errorf("%s: converted up it is invalid: %v", in, err)
		}
		down, err := itemToV1(up)
		if err != nil {
			t.Fatalf("%s down: %v", in, err)
		}
		before, _ := json.Marshal(&old)
		after, _ := json.Marshal(down)
		if !sameJSON(t, before, after) {
			t.Errorf("up and down changed the item:\n before %s\n after  %s", before, after)
		}
		upJSON, _ := json.Marshal(up)
		if !sameJSON(t, before, upJSON) {
			t.Errorf("the two versions encode the same item differently:\n 1.0.0 %s\n 1.1.0 %s", before, upJSON)
		}
		back, err := itemFromV1(down)
		if err != nil || !reflect.DeepEqual(back, up) {
			t.Errorf("down and up changed the item: %+v, %v", back, err)
		}
		checked++
	}
	if checked < 50 {
		t.Errorf("only %d valid instances to round-trip", checked)
	}
	r := &v1.Receipt{Accepted: true}
	at := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	r.At = &at
	up, err := receiptFromV1(r)
	if err != nil || !up.Accepted || !up.At.Equal(at) {
		t.Errorf("receipt up: %+v, %v", up, err)
	}
}

type warehouse struct{}

func (warehouse) Put(_ context.Context, it *Item) (*Receipt, error) {
	return &Receipt{Accepted: it.Count > 0}, nil
}

func (warehouse) PutMany(_ context.Context, it *Item) (*Receipt, error) {
	return &Receipt{Accepted: it.Price != nil}, nil
}

func (warehouse) Audit(_ context.Context, _ *Item) (*Receipt, error) { return &Receipt{}, nil }

// TestForkedServer serves 1.0.0 clients with 1.1.0 handlers over HTTP on
// 127.0.0.1. Recount, which 1.1.0 dropped, keeps a hand-written 1.0.0
// handler.
func TestForkedServer(t *testing.T) {
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "warehouse", Release: "1.1.0"},
		func(s *framework.Server) {
			RegisterFork(s, warehouse{})
			framework.HandleUnary(s, v1.Contract, v1.MethodRecount, func(_ context.Context, it *v1.Item) (*v1.Receipt, error) {
				return &v1.Receipt{Accepted: it.Quantity == 0}, nil
			})
		})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := v1.NewClient(frameworktest.NewClient(t, v1.Contract, framework.ClientConfig{
		Component: "shop", Release: "1.0.0", Endpoints: []string{srv.URL}}))
	r, err := client.Put(ctx, &v1.Item{Sku: "a", Quantity: 2})
	if err != nil || !r.Accepted {
		t.Fatalf("put: %+v, %v", r, err)
	}
	results, err := client.PutMany(ctx, []*v1.Item{{Sku: "b", Price: &v1.Money{Amount: 1, Currency: "EUR"}}, {Sku: "c"}})
	if err != nil || len(results) != 2 || !results[0].Value.Accepted || results[1].Value.Accepted {
		t.Fatalf("put many: %+v, %v", results, err)
	}
	if r, err := client.Recount(ctx, &v1.Item{Sku: "a"}); err != nil || !r.Accepted {
		t.Errorf("recount: %+v, %v", r, err)
	}
}
