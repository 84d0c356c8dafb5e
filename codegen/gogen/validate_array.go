package gogen

import (
	"fmt"
	"strconv"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Checks of the array keywords on slices and tuples: prefixItems, items,
// minItems, maxItems, uniqueItems, contains, minContains and maxContains.

// slice emits the array keywords of s on a slice.
func (vc *vctx) slice(s *node, x val, p pos) {
	elem := gomodel.SliceElem(x.ref)
	prefix := s.Get("prefixItems")
	items := s.Get("items")
	start := 0
	if prefix != nil {
		start = len(prefix.Items)
	}
	if prefix != nil && vc.decided(s, "prefixItems", x) {
		for i, ps := range prefix.Items {
			vc.block(fmt.Sprintf("if len(%s) > %d", x.expr, i), func() {
				vc.check(ps, val{expr: fmt.Sprintf("%s[%d]", x.expr, i), path: gomodel.ValueIndex(x.path, i), ref: elem}, p.keyword("prefixItems/"+strconv.Itoa(i)).member(strconv.Itoa(i)))
			})
		}
	}
	if items != nil && vc.decided(s, "items", x) && !gomodel.IsTrue(items) {
		i := vc.c.fresh("i")
		vc.block(fmt.Sprintf("for %s := %d; %s < len(%s); %s++", i, start, i, x.expr, i), func() {
			vc.c.raw(vc.below(p.keyword("items"), i, true, func(q pos) {
				vc.check(items, val{expr: x.expr + "[" + i + "]", path: gomodel.ValueElems(x.path), ref: elem}, q)
			}))
		})
	}
	vc.itemCounts(s, "len("+x.expr+")", x, p)
	if u := s.Get("uniqueItems"); u != nil && u.Kind == contract.KindBool && u.Bool {
		if !vc.decided(s, "uniqueItems", x) {
			return
		}
		re := elem.Resolve()
		helper := "Duplicate"
		if re.Kind == gomodel.RefPointer {
			helper, re = "DuplicatePointer", re.Elem.Resolve()
		}
		if sh, _ := gomodel.ShapeOf(re); !sh.Scalar() {
			vc.cannot(s, "uniqueItems", x)
			return
		}
		if p.quiet {
			vc.c.line("if _, _, dup := jsonwire.%s(%s); dup {", helper, x.expr)
		} else {
			vc.c.line("if i, j, dup := jsonwire.%s(%s); dup {", helper, x.expr)
		}
		vc.fail(p, "uniqueItems", `"items at index "+strconv.Itoa(i)+" and "+strconv.Itoa(j)+" are equal"`)
		vc.c.line("}")
	}
}

// itemCounts emits minItems and maxItems on an array of n elements.
func (vc *vctx) itemCounts(s *node, n string, x val, p pos) {
	for _, k := range []string{"minItems", "maxItems"} {
		kv := s.Get(k)
		if kv == nil || !vc.decided(s, k, x) {
			continue
		}
		lim, ok := gomodel.Count(kv)
		if !ok {
			vc.cannot(s, k, x)
			continue
		}
		op, word := "<", "minimum"
		if k == "maxItems" {
			op, word = ">", "maximum"
		}
		vc.c.line("if %s %s %d {", n, op, lim)
		vc.fail(p, k, fmt.Sprintf(`"%s %d items required, but found "+strconv.Itoa(%s)+" items"`, word, lim, n))
		vc.c.line("}")
	}
}

// tuple emits the array keywords of s on a tuple.
func (vc *vctx) tuple(s *node, x val, p pos) {
	t := x.ref.Resolve().Named
	prefix := s.Get("prefixItems")
	items := s.Get("items")
	var prefixes []*node
	if prefix != nil && vc.decided(s, "prefixItems", x) {
		prefixes = prefix.Items
	}
	if items != nil && !vc.decided(s, "items", x) {
		items = nil
	}
	// element i is field i, or Rest[i-len(fields)]
	for i, f := range t.Fields {
		expr := x.expr + "." + f.GoName
		path := gomodel.ValueField(x.path, f.GoName)
		ep := p.member(strconv.Itoa(i))
		switch {
		case i < len(prefixes):
			vc.fieldValue(prefixes[i], expr, path, f, ep.keyword("prefixItems/"+strconv.Itoa(i)))
		case items != nil && !gomodel.IsTrue(items):
			vc.fieldValue(items, expr, path, f, ep.keyword("items"))
		}
	}
	rest := gomodel.ValueField(x.path, "Rest")
	if len(prefixes) > len(t.Fields) && t.Rest != nil {
		for i := len(t.Fields); i < len(prefixes); i++ {
			j := i - len(t.Fields)
			vc.block(fmt.Sprintf("if len(%s.Rest) > %d", x.expr, j), func() {
				vc.check(prefixes[i], val{expr: fmt.Sprintf("%s.Rest[%d]", x.expr, j), path: gomodel.ValueIndex(rest, j), ref: t.Rest}, p.keyword("prefixItems/"+strconv.Itoa(i)).member(strconv.Itoa(i)))
			})
		}
	}
	if items != nil && !gomodel.IsTrue(items) && t.Rest != nil {
		start := len(prefixes) - len(t.Fields)
		if start < 0 {
			start = 0
		}
		i := vc.c.fresh("i")
		vc.block(fmt.Sprintf("for %s := %d; %s < len(%s.Rest); %s++", i, start, i, x.expr, i), func() {
			vc.c.raw(vc.below(p.keyword("items"), fmt.Sprintf("%d+%s", len(t.Fields), i), true, func(q pos) {
				vc.check(items, val{expr: x.expr + ".Rest[" + i + "]", path: gomodel.ValueElems(rest), ref: t.Rest}, q)
			}))
		})
	}
	if s.Get("minItems") != nil || s.Get("maxItems") != nil {
		n := vc.c.fresh("count")
		if t.Rest != nil {
			vc.c.line("%s := len(%s.Rest)", n, x.expr)
		} else {
			vc.c.line("%s := 0", n)
		}
		for _, f := range t.Fields {
			cond := fieldPresent(x.expr+"."+f.GoName, f)
			if cond == "true" {
				vc.c.line("%s++", n)
				continue
			}
			vc.c.line("if %s {", cond)
			vc.c.line("%s++", n)
			vc.c.line("}")
		}
		vc.itemCounts(s, n, x, p)
	}
	if u := s.Get("uniqueItems"); u != nil && u.Kind == contract.KindBool && u.Bool {
		vc.refused(s, "uniqueItems", x)
	}
}

// contains emits contains, minContains and maxContains.
func (vc *vctx) contains(s *node, x val, sh shape, p pos) {
	cs := s.Get("contains")
	if cs == nil {
		return
	}
	switch sh {
	case shapeSlice:
	case shapeRaw, shapeTuple:
		vc.refused(s, "contains", x)
		return
	default:
		return
	}
	if !vc.decided(s, "contains", x) {
		return
	}
	minC, maxC := int64(1), int64(-1)
	for _, c := range []struct {
		k     string
		count *int64
	}{{"minContains", &minC}, {"maxContains", &maxC}} {
		if m := s.Get(c.k); m != nil {
			n, ok := gomodel.Count(m)
			if !ok {
				vc.cannot(s, c.k, x)
				return
			}
			*c.count = n
		}
	}
	elem := gomodel.SliceElem(x.ref)
	n, i, q := vc.c.fresh("matched"), vc.c.fresh("i"), vc.c.fresh("q")
	qp := p.keyword("contains")
	qp.v, qp.quiet = "&"+q, true
	inner := vc.c.capture(func() {
		vc.check(cs, val{expr: x.expr + "[" + i + "]", path: gomodel.ValueElems(x.path), ref: elem}, qp)
	})
	if inner == "" {
		vc.c.line("%s := len(%s)", n, x.expr)
	} else {
		vc.c.line("%s := 0", n)
		if uses(inner, i) {
			vc.c.line("for %s := range %s {", i, x.expr)
		} else {
			// the subschema does not look at the item (false, say)
			vc.c.line("for range %s {", x.expr)
		}
		vc.c.line("%s := %s.Quiet()", q, recv(p.v))
		vc.c.raw(inner)
		vc.c.line("if %s.OK() {", q)
		vc.c.line("%s++", n)
		vc.c.line("}")
		vc.c.line("}")
	}
	vc.c.line("if %s < %d {", n, minC)
	vc.fail(p, "minContains", fmt.Sprintf(`"valid must be >= %d, but got "+strconv.Itoa(%s)`, minC, n))
	vc.c.line("}")
	if maxC >= 0 {
		vc.c.line("if %s > %d {", n, maxC)
		vc.fail(p, "maxContains", fmt.Sprintf(`"valid must be <= %d, but got "+strconv.Itoa(%s)`, maxC, n))
		vc.c.line("}")
	}
}
