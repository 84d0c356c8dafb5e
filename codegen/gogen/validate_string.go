package gogen

import (
	"fmt"
	"strconv"

	"github.com/lockstep-dev/lockstep/codegen/gomodel"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Checks of the string keywords: format, minLength, maxLength, pattern.

// stringCheck emits a string keyword the model decided is checked.
func (vc *vctx) stringCheck(s *node, k string, kv *node, sh shape, sv string, x val, p pos) {
	switch sh {
	case shapeString:
	case shapeTime:
		if k == "format" && (kv.Text == "date-time" || !gomodel.KnownFormat(kv.Text)) {
			return // the decoder accepts nothing else, or the format asserts nothing
		}
		vc.cannot(s, k, x)
		return
	case shapeRaw:
		if k == "format" && !gomodel.KnownFormat(kv.Text) {
			return
		}
		vc.cannot(s, k, x)
		return
	default:
		return // the keyword does not apply to this type
	}
	switch k {
	case "format":
		if !gomodel.KnownFormat(kv.Text) {
			return
		}
		vc.c.line("if !jsonwire.IsFormat(%q, %s) {", kv.Text, sv)
		vc.fail(p, "format", "jsonwire.Quote("+sv+")+"+strconv.Quote(" is not valid "+strconv.Quote(kv.Text)))
		vc.c.line("}")
	case "minLength", "maxLength":
		n, ok := gomodel.Count(kv)
		if !ok {
			vc.cannot(s, k, x)
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
		if _, err := jsonwire.CompilePattern(kv.Text); err != nil {
			vc.cannot(s, k, x)
			return
		}
		re := vc.vs.pattern(kv.Text)
		vc.c.line("if !%s.MatchString(%s) {", re, sv)
		vc.fail(p, "pattern", strconv.Quote("does not match pattern "+strconv.Quote(kv.Text)))
		vc.c.line("}")
	}
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
