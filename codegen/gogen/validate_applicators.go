package gogen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Checks of anyOf and oneOf (allOf, not and if/then/else are in value),
// and of the Go types that hold alternatives: tagged and untagged unions.

// alternatives emits anyOf or oneOf: each branch tried quietly.
func (vc *vctx) alternatives(k string, branches []*node, x val, p pos) {
	n := vc.c.fresh("matched")
	vc.c.line("%s := 0", n)
	for i, br := range branches {
		if x.tagProp != "" {
			if tag, ok := gomodel.BranchTag(br, x.tagProp); ok && tag != x.tagValue {
				continue
			}
		}
		guard := ""
		switch {
		case k == "anyOf" && i > 0:
			guard = n + " == 0"
		case k == "oneOf" && i > 1:
			guard = n + " < 2"
		}
		if guard != "" {
			vc.c.line("if %s {", guard)
		}
		q := vc.c.fresh("q")
		vc.c.line("%s := %s.Quiet()", q, recv(p.v))
		qp := p.keyword(k + "/" + strconv.Itoa(i))
		qp.v, qp.quiet = "&"+q, true
		vc.check(br, x, qp)
		vc.c.line("if %s.OK() {", q)
		vc.c.line("%s++", n)
		vc.c.line("}")
		if guard != "" {
			vc.c.line("}")
		}
	}
	if k == "anyOf" {
		vc.c.line("if %s == 0 {", n)
		vc.fail(p, k, `"anyOf failed"`)
	} else {
		vc.c.line("if %s != 1 {", n)
		vc.fail(p, k, `"oneOf failed: "+strconv.Itoa(`+n+`)+" alternatives match"`)
	}
	vc.c.line("}")
}

// tagged emits the checks of s on a tagged union: on whichever variant is
// set.
func (vc *vctx) tagged(s *node, x val, p pos) {
	t := x.ref.Resolve().Named
	vc.c.line("switch {")
	for _, v := range t.Variants {
		vc.c.line("case %s.%s != nil:", x.expr, v.Name)
		y := val{expr: "(*" + x.expr + "." + v.Name + ")", path: gomodel.ValueDeref(gomodel.ValueField(x.path, v.Name)),
			ref: v.Type, tagProp: t.Discriminator, tagValue: v.Tag}
		// A variant must carry its own tag, or it would encode as another.
		vt := v.Type.Resolve().Named
		for _, f := range vt.Fields {
			if f.JSONName != t.Discriminator {
				continue
			}
			expr := y.expr + "." + f.GoName
			if f.Presence == gomodel.PresencePointer {
				expr = "*" + expr
			}
			if !vc.decided(s, "(discriminator)", y) {
				break
			}
			sh, sv, _ := shapeOf(f.Type.Resolve(), expr)
			if sh != shapeString || f.Presence != gomodel.PresenceValue && f.Presence != gomodel.PresencePointer {
				vc.cannot(s, "(discriminator)", y)
				break
			}
			cond := sv + " != " + strconv.Quote(v.Tag)
			if f.Presence == gomodel.PresencePointer {
				cond = y.expr + "." + f.GoName + " == nil || " + cond
			}
			vc.c.line("if %s {", cond)
			vc.fail(p.member(t.Discriminator), "", strconv.Quote(fmt.Sprintf("variant %s must have %s %q", v.Name, t.Discriminator, v.Tag)))
			vc.c.line("}")
		}
		vc.check(s, y, p)
	}
	vc.c.line("default:")
	vc.fail(p, "", `"no variant of the union is set"`)
	vc.c.line("}")
}

// union emits the checks of a union's own schema on the JSON it holds,
// decoded as the first variant that can hold it: every variant's decoder
// is faithful, so any of them gives the schema the same JSON to judge.
func (vc *vctx) union(s *node, x val, p pos) {
	t := x.ref.Resolve().Named
	vc.c.line("switch {")
	vc.c.line("case %s.raw == nil:", x.expr)
	vc.fail(p, "", `"no value is set"`)
	vc.c.line("case jsonwire.IsNull(%s.raw):", x.expr)
	vc.null(s, p)
	vc.c.line("default:")
	var errs []string
	for _, v := range t.Variants {
		y, e := vc.c.fresh("y"), vc.c.fresh("err")
		errs = append(errs, e)
		stmts := vc.c.capture(func() { vc.check(s, val{expr: y, path: gomodel.ValueAs(x.path, v.Name), ref: v.Type}, p) })
		name := y
		if !uses(stmts, y) {
			name = "_"
		}
		vc.c.line("%s, %s := %s.As%s()", name, e, x.expr, v.Name)
		vc.c.line("if %s == nil {", e)
		vc.c.raw(stmts)
		vc.c.line("break")
		vc.c.line("}")
	}
	vc.fail(p, "", `"the value is none of the alternatives"`)
	if len(errs) > 0 {
		vc.c.line("%s.Unrepresentable(%s)", recv(p.v), strings.Join(errs, ", "))
	}
	vc.c.line("}")
}
