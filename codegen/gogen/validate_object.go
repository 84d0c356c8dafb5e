package gogen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/gomodel"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Checks of the object keywords on structs and maps: properties,
// patternProperties, additionalProperties, required, propertyNames,
// minProperties, maxProperties, dependentRequired and dependentSchemas.

// objectOf describes the object value x: its declared fields, and the map
// of other members (a map value itself, or a struct's Extra) if any.
type objectOf struct {
	x      val
	fields []*gomodel.Field
	// extra is the Go expression of the map of other members, "" when the
	// struct is closed; extraPath is its path, extraType its value type.
	extra, extraPath string
	extraType        *gomodel.TypeRef
	// keyed reports that the map's keys are an enum type, not string.
	keyed bool
}

func describeObject(x val) objectOf {
	r := x.ref.Resolve()
	if r.Kind == gomodel.RefMap {
		return objectOf{x: x, extra: x.expr, extraPath: x.path, extraType: r.Elem, keyed: r.Key != nil}
	}
	t := r.Named
	if t.Kind == gomodel.KindMap {
		return objectOf{x: x, extra: x.expr, extraPath: x.path, extraType: t.Elem, keyed: t.Key != nil}
	}
	o := objectOf{x: x, fields: t.Fields}
	if t.Extra != nil {
		o.extra, o.extraType = x.expr+"."+t.Extra.GoName, t.Extra.Value
		o.extraPath = gomodel.ValueField(x.path, t.Extra.GoName)
	}
	return o
}

// fieldPath is the model's path of declared member f.
func (o objectOf) fieldPath(f *gomodel.Field) string { return gomodel.ValueField(o.x.path, f.GoName) }

func (o objectOf) field(name string) *gomodel.Field {
	for _, f := range o.fields {
		if f.JSONName == name {
			return f
		}
	}
	return nil
}

// present returns a Go condition true when member name is present ("true"
// or "false" when that is known now).
func (o objectOf) present(name string) string {
	if f := o.field(name); f != nil {
		return fieldPresent(o.x.expr+"."+f.GoName, f)
	}
	if o.extra == "" {
		return "false"
	}
	return fmt.Sprintf("jsonwire.Has(%s, %q)", o.extra, name)
}

// fieldPresent is the condition under which a struct member or tuple
// element is present.
func fieldPresent(expr string, f *gomodel.Field) string {
	if f.Required {
		return "true"
	}
	switch f.Presence {
	case gomodel.PresenceNullable:
		return "!" + expr + ".IsZero()"
	case gomodel.PresenceValue:
		return "true"
	}
	return expr + " != nil"
}

// fieldValue emits the checks of s on a present struct member or tuple
// element: absent members are skipped, null ones checked as null.
func (vc *vctx) fieldValue(s *node, expr, path string, f *gomodel.Field, p pos) {
	switch f.Presence {
	case gomodel.PresenceValue:
		vc.check(s, val{expr: expr, path: path, ref: f.Type}, p)
	case gomodel.PresencePointer:
		if f.Required {
			vc.check(s, val{expr: expr, path: path, ref: &gomodel.TypeRef{Kind: gomodel.RefPointer, Elem: f.Type}}, p)
			return
		}
		vc.block("if "+expr+" != nil", func() {
			vc.check(s, val{expr: "(*" + expr + ")", path: gomodel.ValueDeref(path), ref: f.Type}, p)
		})
	case gomodel.PresenceOmitZero:
		vc.block("if "+expr+" != nil", func() { vc.value(s, val{expr: expr, path: path, ref: f.Type}, p) })
	case gomodel.PresenceNullable:
		x := vc.c.fresh("x")
		n := vc.c.capture(func() { vc.null(s, p) })
		v := vc.c.capture(func() { vc.check(s, val{expr: x, path: path, ref: f.Type}, p) })
		get := fmt.Sprintf("if %s, ok := %s.Get(); ok {", x, expr)
		if !uses(v, x) {
			get = "if " + expr + ".IsValue() {"
		}
		switch {
		case n != "" && v != "":
			vc.c.line("if %s.IsNull() {", expr)
			vc.c.raw(n)
			vc.c.line("} else %s", get)
			vc.c.raw(v)
			vc.c.line("}")
		case n != "":
			vc.c.line("if %s.IsNull() {", expr)
			vc.c.raw(n)
			vc.c.line("}")
		case v != "":
			vc.c.line("%s", get)
			vc.c.raw(v)
			vc.c.line("}")
		}
	}
}

// memberValue emits the checks of s on member name of an object, if
// present.
func (vc *vctx) memberValue(o objectOf, name string, s *node, p pos) {
	if f := o.field(name); f != nil {
		vc.fieldValue(s, o.x.expr+"."+f.GoName, o.fieldPath(f), f, p)
		return
	}
	if o.extra == "" {
		return
	}
	x := vc.c.fresh("x")
	stmts := vc.c.capture(func() {
		vc.check(s, val{expr: x, path: gomodel.ValueEntry(o.extraPath, name), ref: o.extraType}, p)
	})
	if stmts == "" {
		return
	}
	if uses(stmts, x) {
		vc.c.line("if %s, ok := %s[%q]; ok {", x, o.extra, name)
	} else {
		vc.c.line("if jsonwire.Has(%s, %q) {", o.extra, name)
	}
	vc.c.raw(stmts)
	vc.c.line("}")
}

// object emits the object keywords of s on a struct or map, one keyword
// (or family) at a time, in a fixed order. When the patterns of
// patternProperties do not compile, no object keyword of s is checked:
// which members additionalProperties covers depends on them.
func (vc *vctx) object(s *node, x val, p pos) {
	o := describeObject(x)
	patterns, ok := vc.objectPatterns(s, x)
	if !ok {
		return
	}
	vc.properties(s, o, x, p)
	vc.patternProperties(s, o, patterns, p)
	vc.additionalProperties(s, o, x, patterns, p)
	vc.propertyNames(s, o, x, p)
	vc.required(s, o, x, p)
	vc.propertyCounts(s, o, x, p)
	vc.dependentRequired(s, o, x, p)
	vc.dependentSchemas(s, o, x, p)
}

// objectPatterns compiles the patterns of s's patternProperties, for
// telling at generation time which declared members they cover; ok is
// false when they do not compile (or the model left them unchecked).
func (vc *vctx) objectPatterns(s *node, x val) (patterns []*jsonwire.Pattern, ok bool) {
	pats := s.Get("patternProperties")
	if pats == nil {
		return nil, true
	}
	if !vc.decided(s, "patternProperties", x) {
		return nil, false
	}
	for _, pat := range pats.Keys {
		re, err := jsonwire.CompilePattern(pat)
		if err != nil {
			vc.cannot(s, "patternProperties", x)
			return nil, false
		}
		patterns = append(patterns, re)
	}
	return patterns, true
}

// properties emits each declared property's schema on its member.
func (vc *vctx) properties(s *node, o objectOf, x val, p pos) {
	props := s.Get("properties")
	if props == nil || !vc.decided(s, "properties", x) {
		return
	}
	for i, name := range props.Keys {
		vc.memberValue(o, name, props.Values[i], p.keyword("properties/"+esc(name)).member(name))
	}
}

// patternProperties emits each pattern's schema on the declared members
// it matches (known now) and on the other members that match it (tested
// when validating).
func (vc *vctx) patternProperties(s *node, o objectOf, patterns []*jsonwire.Pattern, p pos) {
	pats := s.Get("patternProperties")
	if pats == nil {
		return
	}
	for i, pat := range pats.Keys {
		ps := pats.Values[i]
		pp := p.keyword("patternProperties/" + esc(pat))
		for _, f := range o.fields {
			if patterns[i].MatchString(f.JSONName) {
				vc.fieldValue(ps, o.x.expr+"."+f.GoName, o.fieldPath(f), f, pp.member(f.JSONName))
			}
		}
		if o.extra == "" || gomodel.IsTrue(ps) {
			continue
		}
		k, e := vc.c.fresh("k"), vc.c.fresh("e")
		vc.rangeOverKeyed(k, e, o.extra, o.keyed, func() {
			vc.block("if "+vc.vs.pattern(pat)+".MatchString("+k+")", func() {
				vc.c.raw(vc.below(pp, k, false, func(q pos) {
					vc.check(ps, val{expr: e, path: gomodel.ValueEntries(o.extraPath), ref: o.extraType}, q)
				}))
			})
		})
	}
}

// additionalProperties emits its schema on the members neither properties
// nor patternProperties cover: declared ones (known now), then the others.
func (vc *vctx) additionalProperties(s *node, o objectOf, x val, patterns []*jsonwire.Pattern, p pos) {
	addl := s.Get("additionalProperties")
	if addl == nil || !vc.decided(s, "additionalProperties", x) || gomodel.IsTrue(addl) {
		return
	}
	props := s.Get("properties")
	ap := p.keyword("additionalProperties")
	for _, f := range o.fields {
		if props != nil && props.Get(f.JSONName) != nil || matchesAny(patterns, f.JSONName) {
			continue
		}
		vc.additionalField(addl, o, f, ap.member(f.JSONName))
	}
	if o.extra != "" {
		vc.additionalExtra(addl, o, props, s.Get("patternProperties"), ap)
	}
}

// additionalField emits additionalProperties on declared member f, which
// no property or pattern covers: refused when present if it is false.
func (vc *vctx) additionalField(addl *node, o objectOf, f *gomodel.Field, fp pos) {
	if !gomodel.IsFalse(addl) {
		vc.fieldValue(addl, o.x.expr+"."+f.GoName, o.fieldPath(f), f, fp)
		return
	}
	cond := fieldPresent(o.x.expr+"."+f.GoName, f)
	if cond != "true" {
		vc.c.line("if %s {", cond)
	}
	vc.fail(fp, "", strconv.Quote(fmt.Sprintf("additionalProperties %q not allowed", f.JSONName)))
	if cond != "true" {
		vc.c.line("}")
	}
}

// additionalExtra emits additionalProperties on the members of the map of
// other members that no declared property names and no pattern matches.
func (vc *vctx) additionalExtra(addl *node, o objectOf, props, pats *node, ap pos) {
	k, e := vc.c.fresh("k"), vc.c.fresh("e")
	checks := vc.c.capture(func() {
		vc.c.raw(vc.below(ap, k, false, func(mp pos) {
			if gomodel.IsFalse(addl) {
				vc.fail(mp, "", `"additionalProperties "+jsonwire.Quote(`+k+`)+" not allowed"`)
				return
			}
			vc.check(addl, val{expr: e, path: gomodel.ValueEntries(o.extraPath), ref: o.extraType}, mp)
		}))
	})
	if checks == "" {
		return
	}
	vc.rangeOverKeyed(k, e, o.extra, o.keyed, func() {
		if props != nil && len(props.Keys) > 0 {
			var quoted []string
			for _, n := range props.Keys {
				quoted = append(quoted, strconv.Quote(n))
			}
			vc.c.line("switch %s {", k)
			vc.c.line("case %s:", strings.Join(quoted, ", "))
			vc.c.line("continue")
			vc.c.line("}")
		}
		for _, pat := range patternKeys(pats) {
			vc.c.line("if %s.MatchString(%s) {", vc.vs.pattern(pat), k)
			vc.c.line("continue")
			vc.c.line("}")
		}
		vc.c.raw(checks)
	})
}

// propertyNames emits its schema on the name of every present member.
func (vc *vctx) propertyNames(s *node, o objectOf, x val, p pos) {
	names := s.Get("propertyNames")
	if names == nil || !vc.decided(s, "propertyNames", x) || gomodel.IsTrue(names) {
		return
	}
	np := p.keyword("propertyNames")
	str := &gomodel.TypeRef{Kind: gomodel.RefBuiltin, Name: "string"}
	for _, f := range o.fields {
		cond := fieldPresent(o.x.expr+"."+f.GoName, f)
		vc.block("if "+cond, func() {
			vc.check(names, val{expr: strconv.Quote(f.JSONName), path: gomodel.ValueName(o.x.path, f.JSONName), ref: str}, np.member(f.JSONName))
		})
	}
	if o.extra != "" {
		k := vc.c.fresh("k")
		vc.rangeOverKeyed(k, "_", o.extra, o.keyed, func() {
			vc.c.raw(vc.below(np, k, false, func(q pos) {
				vc.check(names, val{expr: k, path: gomodel.ValueNames(o.extraPath), ref: str}, q)
			}))
		})
	}
}

// required emits one check listing every required member that is absent;
// members the Go type always holds need none.
func (vc *vctx) required(s *node, o objectOf, x val, p pos) {
	req := s.Get("required")
	if req == nil || !vc.decided(s, "required", x) || len(req.Items) == 0 {
		return
	}
	var checks []string
	for _, it := range req.Items {
		cond := o.present(it.Text)
		if cond == "true" {
			continue
		}
		checks = append(checks, cond, it.Text)
	}
	if len(checks) == 0 {
		return
	}
	vc.c.line("{")
	vc.c.line("var missing []string")
	for i := 0; i < len(checks); i += 2 {
		if checks[i] == "false" {
			vc.c.line("missing = append(missing, %q)", checks[i+1])
			continue
		}
		vc.c.line("if %s {", not(checks[i]))
		vc.c.line("missing = append(missing, %q)", checks[i+1])
		vc.c.line("}")
	}
	vc.c.line("if len(missing) > 0 {")
	vc.fail(p, "required", "jsonwire.MissingMessage(missing)")
	vc.c.line("}")
	vc.c.line("}")
}

// propertyCounts emits minProperties and maxProperties on one count of
// the present members.
func (vc *vctx) propertyCounts(s *node, o objectOf, x val, p pos) {
	minP, maxP := s.Get("minProperties"), s.Get("maxProperties")
	if minP == nil && maxP == nil {
		return
	}
	n := vc.c.fresh("count")
	vc.c.line("%s := 0", n)
	for _, f := range o.fields {
		cond := fieldPresent(o.x.expr+"."+f.GoName, f)
		if cond == "true" {
			vc.c.line("%s++", n)
			continue
		}
		vc.c.line("if %s {", cond)
		vc.c.line("%s++", n)
		vc.c.line("}")
	}
	if o.extra != "" {
		vc.c.line("%s += len(%s)", n, o.extra)
	}
	for _, b := range []struct {
		keyword, op, message string
		limit                *node
	}{
		{"minProperties", "<", "minimum %d properties allowed, but found ", minP},
		{"maxProperties", ">", "maximum %d properties allowed, but found ", maxP},
	} {
		if b.limit == nil || !vc.decided(s, b.keyword, x) {
			continue
		}
		lim, ok := gomodel.Count(b.limit)
		if !ok {
			vc.cannot(s, b.keyword, x)
			continue
		}
		vc.c.line("if %s %s %d {", n, b.op, lim)
		vc.fail(p, b.keyword, fmt.Sprintf(`"`+b.message+`"+strconv.Itoa(%s)+" properties"`, lim, n))
		vc.c.line("}")
	}
}

// dependentRequired emits, for each member that is present, the members
// it requires.
func (vc *vctx) dependentRequired(s *node, o objectOf, x val, p pos) {
	dr := s.Get("dependentRequired")
	if dr == nil || !vc.decided(s, "dependentRequired", x) {
		return
	}
	for i, name := range dr.Keys {
		cond := o.present(name)
		if cond == "false" {
			continue
		}
		vc.c.line("if %s {", cond)
		for j, it := range dr.Values[i].Items {
			need := o.present(it.Text)
			if need == "true" {
				continue
			}
			vc.c.line("if %s {", not(need))
			vc.fail(p, "dependentRequired/"+esc(name)+"/"+strconv.Itoa(j),
				strconv.Quote(fmt.Sprintf("property %q is required, if %q property exists", it.Text, name)))
			vc.c.line("}")
		}
		vc.c.line("}")
	}
}

// dependentSchemas emits, for each member that is present, its schema on
// the whole object.
func (vc *vctx) dependentSchemas(s *node, o objectOf, x val, p pos) {
	ds := s.Get("dependentSchemas")
	if ds == nil || !vc.decided(s, "dependentSchemas", x) {
		return
	}
	for i, name := range ds.Keys {
		cond := o.present(name)
		if cond == "false" {
			continue
		}
		vc.c.line("if %s {", cond)
		vc.check(ds.Values[i], x, p.keyword("dependentSchemas/"+esc(name)))
		vc.c.line("}")
	}
}

// not negates a generated condition.
func not(cond string) string {
	if strings.HasPrefix(cond, "!") && !strings.ContainsAny(cond, " &|") {
		return cond[1:]
	}
	if !strings.ContainsAny(cond, " &|!") {
		return "!" + cond
	}
	return "!(" + cond + ")"
}

func patternKeys(pats *node) []string {
	if pats == nil {
		return nil
	}
	return pats.Keys
}

func matchesAny(res []*jsonwire.Pattern, name string) bool {
	for _, re := range res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
