package gogen

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Checks of "type", "enum" and "const" on a value of known shape.

// typeCheck emits the check of "type".
func (vc *vctx) typeCheck(t *node, sh shape, sv string, p pos) {
	var names []string
	var allowed kinds
	if t.Kind == contract.KindString {
		names = []string{t.Text}
	}
	for _, it := range t.Items {
		names = append(names, it.Text)
	}
	for _, n := range names {
		allowed |= gomodel.JSONTypeNamed(n)
	}
	want := strings.Join(names, " or ")
	if sh == shapeRaw {
		var cases []string
		for _, c := range []struct {
			k    kinds
			name string
		}{{kNull, "KindNull"}, {kBoolean, "KindBoolean"}, {kInteger, "KindInteger"}, {kNumber, "KindNumber"},
			{kString, "KindString"}, {kArray, "KindArray"}, {kObject, "KindObject"}} {
			if allowed&c.k != 0 {
				cases = append(cases, "jsonwire."+c.name)
			}
		}
		k := vc.c.fresh("kind")
		vc.c.line("switch %s := jsonwire.KindOf(%s); %s {", k, sv, k)
		if len(cases) > 0 {
			vc.c.line("case %s:", strings.Join(cases, ", "))
		}
		vc.c.line("default:")
		vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got "+%s.String()`, want, k))
		vc.c.line("}")
		return
	}
	have := sh.JSON()
	switch {
	case have&^allowed == 0:
	case sh == shapeFloat || sh == shapeFloat32:
		if allowed&kInteger != 0 {
			vc.c.line("if !jsonwire.IsIntegral(float64(%s)) {", sv)
			vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got number"`, want))
			vc.c.line("}")
			return
		}
		vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got number"`, want))
	default:
		vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got %s"`, want, have))
	}
}

// enum emits the check of "enum" or "const" on a scalar.
func (vc *vctx) enum(s *node, keyword string, vals []*node, sh shape, sv string, x val, p pos) {
	var conds []string
	var shown []string
	for _, v := range vals {
		b, _ := v.MarshalJSON()
		shown = append(shown, string(b))
	}
	message := strconv.Quote("value must be one of " + strings.Join(shown, ", "))
	if keyword == "const" {
		message = strconv.Quote("value must be " + strings.Join(shown, ", "))
	}
	switch sh {
	case shapeString:
		for _, v := range vals {
			if v.Kind == contract.KindString {
				conds = append(conds, sv+" != "+strconv.Quote(v.Text))
			}
		}
	case shapeInt, shapeUint64:
		for _, v := range vals {
			if v.Kind != contract.KindNumber {
				continue
			}
			r, ok := new(big.Rat).SetString(v.Text)
			if !ok || !r.IsInt() || !fits(r.Num(), sh) {
				continue
			}
			conds = append(conds, intExpr(sv, sh)+" != "+r.Num().String())
		}
	case shapeFloat:
		for _, v := range vals {
			if v.Kind == contract.KindNumber {
				conds = append(conds, sv+" != "+floatLit(v.Text))
			}
		}
	case shapeBool:
		for _, v := range vals {
			if v.Kind == contract.KindBool {
				conds = append(conds, sv+" != "+strconv.FormatBool(v.Bool))
			}
		}
	case shapeStruct, shapeMap, shapeSlice, shapeTuple:
		for _, v := range vals {
			if v.Kind == contract.KindObject || v.Kind == contract.KindArray {
				vc.cannot(s, keyword, x)
				return
			}
		}
	default:
		vc.cannot(s, keyword, x)
		return
	}
	if len(conds) == 0 {
		vc.fail(p, keyword, message)
		return
	}
	vc.c.line("if %s {", strings.Join(conds, " && "))
	vc.fail(p, keyword, message)
	vc.c.line("}")
}

// fits reports whether an integer fits the Go domain of a shape.
func fits(n *big.Int, sh shape) bool {
	if sh == shapeUint64 {
		return n.Sign() >= 0 && n.IsUint64()
	}
	return n.IsInt64()
}
