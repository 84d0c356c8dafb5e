package recursion

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	roundtrip.Check[Tree](t, Contract, "Tree", `{"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4, "children": []}]}`)
	l := roundtrip.Check[List](t, Contract, "List", `{"head": "a", "next": {"head": "b", "next": null}}`)
	if l.Next == nil || l.Next.Next != nil {
		t.Errorf("decoded %+v", l)
	}
	e := roundtrip.Check[Expr](t, Contract, "Expr", `{"op": "+", "left": {"expr": {"op": "lit", "left": {"literal": 1}}}, "right": {"literal": 2, "expr": null}}`)
	left, ok := e.Left.Get()
	if !ok || !e.Right.Expr.IsNull() || *e.Right.Literal != 2 {
		t.Errorf("decoded %+v", e)
	}
	inner, ok := left.Expr.Get()
	if !ok || inner.Op != "lit" {
		t.Errorf("decoded %+v", left)
	}
	roundtrip.Check[Expr](t, Contract, "Expr", `{"op": "x", "left": null}`)
}
