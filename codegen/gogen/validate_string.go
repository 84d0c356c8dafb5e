package gogen

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Checks of the string keywords: format, minLength, maxLength, pattern.

// knownFormats are the formats jsonschema/v5 asserts.
func knownFormat(name string) bool {
	_, ok := jsonschema.Formats[name]
	return ok
}

// stringCheck emits a string keyword.
func (vc *vctx) stringCheck(s *node, k string, kv *node, sh shape, sv string, p pos) {
	switch sh {
	case shapeString:
	case shapeTime:
		if k == "format" && kv.Text == "date-time" {
			return // the decoder accepts nothing else
		}
		if k == "format" && !knownFormat(kv.Text) {
			return
		}
		vc.uncovered(s, "%s on a date-time held as time.Time is not checked by generated code", k)
		return
	case shapeRaw:
		if k == "format" && !knownFormat(kv.Text) {
			return
		}
		vc.uncovered(s, "%s on raw JSON is not checked by generated code", k)
		return
	default:
		return // the keyword does not apply to this type
	}
	switch k {
	case "format":
		if !knownFormat(kv.Text) {
			return
		}
		vc.c.line("if !jsonwire.IsFormat(%q, %s) {", kv.Text, sv)
		vc.fail(p, "format", "jsonwire.Quote("+sv+")+"+strconv.Quote(" is not valid "+strconv.Quote(kv.Text)))
		vc.c.line("}")
	case "minLength", "maxLength":
		n, ok := nonNegative(kv)
		if !ok {
			vc.uncovered(s, "%s %s is not a length", k, kv.Text)
			return
		}
		op, word := "<", ">="
		if k == "maxLength" {
			op, word = ">", "<="
		}
		vc.c.line("if n := jsonwire.Length(%s); n %s %d {", sv, op, n)
		vc.fail(p, k, fmt.Sprintf(`"length must be %s %d, but got "+strconv.Itoa(n)`, word, n))
		vc.c.line("}")
	case "pattern":
		if _, err := regexp.Compile(kv.Text); err != nil {
			vc.uncovered(s, "pattern %q does not compile: %v", kv.Text, err)
			return
		}
		re := vc.vs.pattern(kv.Text)
		vc.c.line("if !%s.MatchString(%s) {", re, sv)
		vc.fail(p, "pattern", strconv.Quote("does not match pattern "+strconv.Quote(kv.Text)))
		vc.c.line("}")
	}
}

func nonNegative(n *node) (int64, bool) {
	if n.Kind != contract.KindNumber {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(n.Text)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// pattern returns the package-level variable holding a compiled pattern.
func (vs *validators) pattern(p string) string {
	i, ok := vs.patternIx[p]
	if !ok {
		i = len(vs.patterns)
		vs.patternIx[p] = i
		vs.patterns = append(vs.patterns, p)
	}
	return "pattern" + strconv.Itoa(i)
}
