package gogen

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Checks of the numeric keywords: minimum, maximum, exclusiveMinimum,
// exclusiveMaximum and multipleOf, on integers exactly and on float64
// through jsonwire.MultipleOfFloat where a step is fractional.

func intExpr(sv string, sh shape) string {
	if sh == shapeUint64 {
		return sv
	}
	return "int64(" + sv + ")"
}

// floatLit renders a JSON number as a Go float64 literal.
func floatLit(text string) string {
	f, _ := strconv.ParseFloat(text, 64)
	switch {
	case math.IsInf(f, 1):
		return "math.Inf(1)"
	case math.IsInf(f, -1):
		return "math.Inf(-1)"
	}
	lit := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(lit, ".e") {
		lit += ".0"
	}
	return "float64(" + lit + ")"
}

// rat returns the package-level variable holding a number as a big.Rat.
func (vs *validators) rat(text string) string {
	i, ok := vs.ratIx[text]
	if !ok {
		i = len(vs.rats)
		vs.ratIx[text] = i
		vs.rats = append(vs.rats, text)
	}
	return "number" + strconv.Itoa(i)
}

// numberCheck emits a numeric keyword.
// The model decided it is checked: a positive multipleOf, a number Go
// reads, a value of an integer or float64.
func (vc *vctx) numberCheck(s *node, k string, kv *node, sh shape, sv string, base *gomodel.TypeRef, x val, p pos) {
	switch sh {
	case shapeInt, shapeUint64, shapeFloat:
	case shapeFloat32, shapeRaw:
		vc.cannot(s, k, x)
		return
	default:
		return
	}
	bound, ok := new(big.Rat).SetString(kv.Text)
	if kv.Kind != contract.KindNumber || !ok || k == "multipleOf" && bound.Sign() <= 0 {
		vc.cannot(s, k, x)
		return
	}
	shown := kv.Text
	if sh == shapeFloat {
		vc.floatCheck(k, kv.Text, sv, shown, p)
		return
	}
	iv := intExpr(sv, sh)
	show := fmt.Sprintf(`"must be %%s %s but found "+%s`, shown, formatInt(iv, sh))
	if k == "multipleOf" {
		a := new(big.Int).Set(bound.Num())
		msg := fmt.Sprintf(`%s+" not multipleOf %s"`, formatInt(iv, sh), shown)
		if !fits(a, sh) {
			vc.c.line("if %s != 0 {", iv)
		} else {
			vc.c.line("if %s %% %s != 0 {", iv, a.String())
		}
		vc.fail(p, k, msg)
		vc.c.line("}")
		return
	}
	// The integer the value must not pass, and on which side.
	var limit *big.Int
	lower := k == "minimum" || k == "exclusiveMinimum"
	floor := new(big.Int).Div(bound.Num(), bound.Denom()) // rounds toward -inf for positive denominators
	ceil := new(big.Int).Set(floor)
	if !bound.IsInt() {
		ceil.Add(ceil, big.NewInt(1))
	}
	word := ""
	switch k {
	case "minimum":
		limit, word = ceil, ">="
	case "exclusiveMinimum":
		limit, word = new(big.Int).Add(floor, big.NewInt(1)), ">"
	case "maximum":
		limit, word = floor, "<="
	case "exclusiveMaximum":
		limit, word = new(big.Int).Sub(ceil, big.NewInt(1)), "<"
	}
	msg := fmt.Sprintf(show, word)
	lo, hi := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	if sh == shapeUint64 {
		lo, hi = big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64)
	}
	switch {
	case lower && limit.Cmp(lo) <= 0, !lower && limit.Cmp(hi) >= 0:
		// every value of the Go type passes
	case lower && limit.Cmp(hi) > 0, !lower && limit.Cmp(lo) < 0:
		vc.fail(p, k, msg)
	case lower:
		vc.c.line("if %s < %s {", iv, limit.String())
		vc.fail(p, k, msg)
		vc.c.line("}")
	default:
		vc.c.line("if %s > %s {", iv, limit.String())
		vc.fail(p, k, msg)
		vc.c.line("}")
	}
}

func formatInt(iv string, sh shape) string {
	if sh == shapeUint64 {
		return "strconv.FormatUint(" + iv + ", 10)"
	}
	return "strconv.FormatInt(" + iv + ", 10)"
}

// floatCheck emits a numeric keyword on a float64. Comparisons are of
// float64 values, exact for numbers of up to 15 significant digits.
func (vc *vctx) floatCheck(k, text, sv, shown string, p pos) {
	found := `strconv.FormatFloat(` + sv + `, 'g', -1, 64)`
	if k == "multipleOf" {
		vc.c.line("if !jsonwire.MultipleOfFloat(%s, %s) {", sv, vc.vs.rat(text))
		vc.fail(p, k, fmt.Sprintf(`%s+" not multipleOf %s"`, found, shown))
		vc.c.line("}")
		return
	}
	ops := map[string][2]string{
		"minimum": {"<", ">="}, "exclusiveMinimum": {"<=", ">"}, "maximum": {">", "<="}, "exclusiveMaximum": {">=", "<"},
	}[k]
	op, word := ops[0], ops[1]
	vc.c.line("if %s %s %s {", sv, op, floatLit(text))
	vc.fail(p, k, fmt.Sprintf(`"must be %s %s but found "+%s`, word, shown, found))
	vc.c.line("}")
}
