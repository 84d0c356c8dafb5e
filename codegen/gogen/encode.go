package gogen

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Generated encoders: every named type that can have one gets
//
//	func (m *T) AppendJSON(b []byte) ([]byte, error)
//
// which appends the value's JSON with framework/jsonwire's helpers, so the
// runtime encodes requests, answers and topic objects without
// encoding/json's reflection (jsonwire.Marshal, into a pooled buffer).
// The output is byte for byte what json.Marshal writes for the same
// value, errors included where json.Marshal fails: the struct's member
// order, omitzero as encoding/json applies it (a non-nil *time.Time that
// IsZero is left out too), map members sorted, the types' own MarshalJSON
// methods (undeclared members, tuples, unions) reproduced, strings escaped
// and numbers formatted as encoding/json does. The runtime keeps calling
// json.Marshal for types without one.
//
// A type gets no encoder when it is an alias (it has its target's, if
// any) or when it reaches a type from another package (x-go-type): how
// encoding/json writes those depends on their methods and on whether the
// value is addressable where it sits, which only encoding/json knows. The
// types that contain such a type get none either, so each message is
// encoded one way or the other as a whole.

// encoders decides which named types of a package get an AppendJSON.
type encoders struct {
	no map[*gomodel.Type]bool
}

func buildEncoders(pkg *gomodel.Package) *encoders {
	e := &encoders{no: map[*gomodel.Type]bool{}}
	for _, t := range pkg.Types {
		if t.Kind == gomodel.KindAlias || !shapeKnown(t) {
			e.no[t] = true
		}
	}
	// Whatever refers to a type without an encoder (or to an external
	// type) has none either; repeat until nothing changes, which also
	// settles cycles.
	for changed := true; changed; {
		changed = false
		for _, t := range pkg.Types {
			if e.no[t] {
				continue
			}
			if e.refersToUnencodable(t) {
				e.no[t] = true
				changed = true
			}
		}
	}
	return e
}

// shapeKnown reports whether the encoder emitter knows t's shape: a
// scalar or enum defined on a plain JSON scalar, optional struct members
// that are pointers, omitzero nilables or nullables (the model's presence
// rules).
func shapeKnown(t *gomodel.Type) bool {
	switch t.Kind {
	case gomodel.KindScalar, gomodel.KindEnum:
		// The model defines these on plain JSON scalars only; a named
		// time.Time or json.RawMessage would lose the builtin's
		// MarshalJSON, and json.Marshal would write {} or base64.
		r := t.Elem.Resolve()
		return r.Kind == gomodel.RefBuiltin && plainScalars[r.Name]
	case gomodel.KindStruct:
	default:
		return true
	}
	for _, f := range t.Fields {
		if !f.Required && f.Presence == gomodel.PresenceValue {
			return false
		}
	}
	return true
}

func (e *encoders) has(t *gomodel.Type) bool { return t != nil && !e.no[t] }

func (e *encoders) refersToUnencodable(t *gomodel.Type) bool {
	bad := false
	var walk func(r *gomodel.TypeRef)
	walk = func(r *gomodel.TypeRef) {
		if r == nil || bad {
			return
		}
		r = r.Resolve()
		switch r.Kind {
		case gomodel.RefExternal:
			bad = true
		case gomodel.RefNamed:
			if !e.has(r.Named) {
				bad = true
			}
		default:
			walk(r.Elem)
		}
	}
	walk(t.Elem)
	walk(t.Rest)
	for _, f := range t.Fields {
		walk(f.Type)
	}
	if t.Extra != nil {
		walk(t.Extra.Value)
	}
	for _, v := range t.Variants {
		walk(v.Type)
	}
	return bad
}

// encoder renders a named type's AppendJSON method, or nothing.
func (g *generator) encoder(t *gomodel.Type) string {
	if g.enc == nil {
		g.enc = buildEncoders(g.pkg)
	}
	if !g.enc.has(t) {
		return ""
	}
	c := &code{}
	body := c.capture(func() { g.encodeBody(c, t) })
	c.line("")
	c.line("// AppendJSON appends the JSON encoding of %s to b, byte for byte what", t.Name)
	c.line("// json.Marshal writes, without reflection.")
	c.line("func (m *%s) AppendJSON(b []byte) ([]byte, error) {", t.Name)
	switch t.Kind {
	case gomodel.KindMap, gomodel.KindSlice:
		c.line("if m == nil || *m == nil {")
	default:
		c.line("if m == nil {")
	}
	c.line(`return append(b, "null"...), nil`)
	c.line("}")
	if uses(body, "err") {
		c.line("var err error")
	}
	c.raw(body)
	c.line("}")
	return c.b.String()
}

func (g *generator) encodeBody(c *code, t *gomodel.Type) {
	switch t.Kind {
	case gomodel.KindStruct:
		g.encodeStruct(c, t)
	case gomodel.KindTuple:
		g.encodeTuple(c, t)
	case gomodel.KindTaggedUnion:
		n := c.fresh("n")
		c.line("%s := 0", n)
		for _, v := range t.Variants {
			c.line("if m.%s != nil {", v.Name)
			c.line("%s++", n)
			c.line("}")
		}
		c.line("if %s != 1 {", n)
		c.line("return nil, jsonwire.VariantCount(%q, %s)", t.Name, n)
		c.line("}")
		c.line("switch {")
		for _, v := range t.Variants {
			c.line("case m.%s != nil:", v.Name)
			g.appendValue(c, v.Type, "(*m."+v.Name+")")
		}
		c.line("}")
		c.line("return b, nil")
	case gomodel.KindUnion:
		c.line("if m.raw == nil {")
		c.line("return nil, jsonwire.NoRaw(%q)", t.Name)
		c.line("}")
		c.line("return jsonwire.AppendRaw(b, m.raw)")
	case gomodel.KindMap, gomodel.KindSlice:
		g.appendValue(c, &gomodel.TypeRef{Kind: refKindOf(t.Kind), Elem: t.Elem, Key: t.Key}, "(*m)")
		c.line("return b, nil")
	case gomodel.KindScalar, gomodel.KindEnum:
		g.appendScalar(c, t.Elem, "*m")
		c.line("return b, nil")
	}
}

func refKindOf(k gomodel.Kind) gomodel.RefKind {
	if k == gomodel.KindMap {
		return gomodel.RefMap
	}
	return gomodel.RefSlice
}

// memberKey is a member's name as encoding/json writes it, with the
// comma that precedes every member (jsonwire.CloseObject turns the first
// into the brace).
func memberKey(name string) string {
	k, _ := json.Marshal(name) // a string always encodes
	return strconv.Quote("," + string(k) + ":")
}

func (g *generator) encodeStruct(c *code, t *gomodel.Type) {
	start := c.fresh("start")
	c.line("%s := len(b)", start)
	for _, f := range t.Fields {
		expr := "m." + f.GoName
		if cond := omitCondition(f, expr); cond != "" {
			c.line("if %s {", cond)
			c.line("b = append(b, %s...)", memberKey(f.JSONName))
			if f.Presence == gomodel.PresencePointer {
				// The condition holds only for a non-nil pointer.
				g.appendValue(c, f.Type, "(*"+expr+")")
			} else {
				g.appendField(c, f, expr)
			}
			c.line("}")
			continue
		}
		c.line("b = append(b, %s...)", memberKey(f.JSONName))
		g.appendField(c, f, expr)
	}
	if x := t.Extra; x != nil {
		keys, k, v, kerr := c.fresh("keys"), c.fresh("k"), c.fresh("v"), c.fresh("kerr")
		c.line("if len(m.%s) > 0 {", x.GoName)
		c.line("%s, %s := jsonwire.ExtraKeys(m.%s, %s)", keys, kerr, x.GoName, declared(t))
		c.line("if %s != nil {", kerr)
		c.line("return nil, %s", kerr)
		c.line("}")
		c.line("for _, %s := range %s {", k, keys)
		c.line("b = append(b, ',')")
		c.line("b = jsonwire.AppendString(b, %s)", k)
		c.line("b = append(b, ':')")
		c.line("%s := m.%s[%s]", v, x.GoName, k)
		g.appendValue(c, x.Value, v)
		c.line("}")
		c.line("}")
	}
	c.line("return jsonwire.CloseObject(b, %s), nil", start)
}

// omitCondition is the Go condition under which an optional member is
// written, as encoding/json's omitzero decides it; "" for a required
// member, which is always written.
func omitCondition(f *gomodel.Field, expr string) string {
	if f.Required {
		return ""
	}
	switch f.Presence {
	case gomodel.PresenceNullable:
		return "!" + expr + ".IsZero()"
	case gomodel.PresencePointer:
		if r := f.Type.Resolve(); r.Kind == gomodel.RefBuiltin && r.Name == "time.Time" {
			// omitzero calls IsZero through the pointer.
			return expr + " != nil && !" + expr + ".IsZero()"
		}
	}
	return expr + " != nil"
}

// appendField appends a field's value as its Go type holds it: through
// the pointer or Nullable its presence adds.
func (g *generator) appendField(c *code, f *gomodel.Field, expr string) {
	switch f.Presence {
	case gomodel.PresencePointer:
		g.appendValue(c, &gomodel.TypeRef{Kind: gomodel.RefPointer, Elem: f.Type}, expr)
	case gomodel.PresenceNullable:
		v, ok := c.fresh("v"), c.fresh("ok")
		c.line("if %s, %s := %s.Get(); %s {", v, ok, expr, ok)
		g.appendValue(c, f.Type, v)
		c.line("} else {")
		c.line(`b = append(b, "null"...)`)
		c.line("}")
	default:
		g.appendValue(c, f.Type, expr)
	}
}

func (g *generator) encodeTuple(c *code, t *gomodel.Type) {
	c.line("b = append(b, '[')")
	optional := false
	for _, f := range t.Fields {
		if !f.Required {
			optional = true
		}
	}
	missing := c.fresh("missing")
	if optional {
		c.line("%s := -1", missing)
	}
	write := func(i int, emit func()) {
		if optional {
			c.line("if %s >= 0 {", missing)
			c.line("return nil, jsonwire.TupleHole(%d, %s)", i, missing)
			c.line("}")
		}
		if i > 0 {
			c.line("b = append(b, ',')")
		}
		emit()
	}
	for i, f := range t.Fields {
		expr := "m." + f.GoName
		if f.Required {
			write(i, func() { g.appendField(c, f, expr) })
			continue
		}
		c.line("if %s {", present("m", f))
		write(i, func() { g.appendField(c, f, expr) })
		c.line("} else if %s < 0 {", missing)
		c.line("%s = %d", missing, i)
		c.line("}")
	}
	if t.Rest != nil {
		j := c.fresh("j")
		c.line("for %s := range m.Rest {", j)
		if optional {
			c.line("if %s >= 0 {", missing)
			c.line("return nil, jsonwire.TupleHole(%d+%s, %s)", len(t.Fields), j, missing)
			c.line("}")
		}
		if len(t.Fields) > 0 {
			c.line("b = append(b, ',')")
		} else {
			c.line("if %s > 0 {", j)
			c.line("b = append(b, ',')")
			c.line("}")
		}
		g.appendValue(c, t.Rest, "m.Rest["+j+"]")
		c.line("}")
	}
	c.line("return append(b, ']'), nil")
}

// mapKeysOnStack is how many keys of a map an encoder sorts without
// allocating.
const mapKeysOnStack = 16

// appendValue emits statements that append the JSON of expr, an
// expression of type r that can be addressed (a field, an element, a local
// variable).
func (g *generator) appendValue(c *code, r *gomodel.TypeRef, expr string) {
	r = r.Resolve()
	switch r.Kind {
	case gomodel.RefNamed:
		if t := r.Named; t.Kind == gomodel.KindScalar || t.Kind == gomodel.KindEnum {
			// shapeKnown: on a plain JSON scalar, appended inline.
			g.appendScalar(c, t.Elem, expr)
			return
		}
		c.line("if b, err = %s.AppendJSON(b); err != nil {", expr)
		c.line("return nil, err")
		c.line("}")
	case gomodel.RefBuiltin:
		switch r.Name {
		case "time.Time":
			c.line("if b, err = jsonwire.AppendTime(b, %s); err != nil {", expr)
			c.line("return nil, err")
			c.line("}")
		case "json.RawMessage":
			c.line("if b, err = jsonwire.AppendRaw(b, %s); err != nil {", expr)
			c.line("return nil, err")
			c.line("}")
		default:
			g.appendScalar(c, r, expr)
		}
	case gomodel.RefPointer:
		c.line("if %s == nil {", expr)
		c.line(`b = append(b, "null"...)`)
		c.line("} else {")
		g.appendValue(c, r.Elem, "(*"+expr+")")
		c.line("}")
	case gomodel.RefSlice:
		i := c.fresh("i")
		c.line("if %s == nil {", expr)
		c.line(`b = append(b, "null"...)`)
		c.line("} else {")
		c.line("b = append(b, '[')")
		c.line("for %s := range %s {", i, expr)
		c.line("if %s > 0 {", i)
		c.line("b = append(b, ',')")
		c.line("}")
		g.appendValue(c, r.Elem, expr+"["+i+"]")
		c.line("}")
		c.line("b = append(b, ']')")
		c.line("}")
	case gomodel.RefMap:
		i, k, v, keys := c.fresh("i"), c.fresh("k"), c.fresh("v"), c.fresh("keys")
		c.line("if %s == nil {", expr)
		c.line(`b = append(b, "null"...)`)
		c.line("} else {")
		c.line("b = append(b, '{')")
		c.line("var %s [%d]%s", keys, mapKeysOnStack, gomodel.KeyString(r.Key))
		c.line("for %s, %s := range jsonwire.SortedKeys(%s, %s[:0]) {", i, k, expr, keys)
		c.line("if %s > 0 {", i)
		c.line("b = append(b, ',')")
		c.line("}")
		if r.Key != nil {
			c.line("b = jsonwire.AppendString(b, string(%s))", k)
		} else {
			c.line("b = jsonwire.AppendString(b, %s)", k)
		}
		c.line("b = append(b, ':')")
		c.line("%s := %s[%s]", v, expr, k)
		g.appendValue(c, r.Elem, v)
		c.line("}")
		c.line("b = append(b, '}')")
		c.line("}")
	default:
		g.fail(fmt.Errorf("lockstep-gen: no encoder for %s", gomodel.GoString(r)))
	}
}

// plainScalars are the builtins that appendScalar writes.
var plainScalars = map[string]bool{
	"string": true, "bool": true, "int64": true, "int32": true, "uint64": true, "uint32": true, "float64": true, "float32": true,
}

// appendScalar emits the append of a plain JSON scalar, expr converted to
// its builtin type r (so named scalars and enums work too).
func (g *generator) appendScalar(c *code, r *gomodel.TypeRef, expr string) {
	r = r.Resolve()
	switch r.Name {
	case "string":
		c.line("b = jsonwire.AppendString(b, string(%s))", expr)
	case "bool":
		c.line("b = jsonwire.AppendBool(b, bool(%s))", expr)
	case "int64", "int32":
		c.line("b = jsonwire.AppendInt(b, int64(%s))", expr)
	case "uint64", "uint32":
		c.line("b = jsonwire.AppendUint(b, uint64(%s))", expr)
	case "float64":
		c.line("if b, err = jsonwire.AppendFloat64(b, float64(%s)); err != nil {", expr)
		c.line("return nil, err")
		c.line("}")
	case "float32":
		c.line("if b, err = jsonwire.AppendFloat32(b, float32(%s)); err != nil {", expr)
		c.line("return nil, err")
		c.line("}")
	default:
		g.fail(fmt.Errorf("lockstep-gen: no encoder for builtin %s", r.Name))
	}
}
