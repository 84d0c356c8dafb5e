package gogen

import (
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Generated deep copies let a watch feed decode each change once and hand
// every informer a copy of its own: far cheaper than a decode, since a
// copy parses nothing and shares the strings (Go strings are immutable),
// while everything a holder could modify (slices, maps, pointers) is
// new. A message gets DeepCopy when every type it reaches has a shape
// whose copy is plain code: structs without undeclared members, slices,
// maps, pointers, scalars and enums, and jsonwire.Nullable of a value
// without references. Any other message (raw JSON, unions, tuples,
// x-go-types) has none, and the runtime decodes it once per informer.

// copyShape says how a type is copied.
type copyShape int

const (
	copyNone  copyShape = iota // no generated copy
	copyValue                  // assignment copies it: it holds no references
	copyDeep                   // it holds references: a deepCopyInto method
)

// copyShapes is the shape of each named type, computed once per file.
type copyShapes map[*gomodel.Type]copyShape

// named is the shape of a named type. A type being worked out (a
// recursive type) counts as copyDeep meanwhile, which holds: a cycle
// only passes through slices, maps or pointers.
func (s copyShapes) named(t *gomodel.Type) copyShape {
	if sh, ok := s[t]; ok {
		return sh
	}
	s[t] = copyDeep
	sh := s.compute(t)
	s[t] = sh
	return sh
}

func (s copyShapes) compute(t *gomodel.Type) copyShape {
	switch t.Kind {
	case gomodel.KindScalar, gomodel.KindEnum:
		return s.ref(t.Elem)
	case gomodel.KindSlice, gomodel.KindMap:
		if s.ref(t.Elem) == copyNone {
			return copyNone
		}
		return copyDeep
	case gomodel.KindStruct:
		if t.Extra != nil {
			return copyNone
		}
		sh := copyValue
		for _, f := range t.Fields {
			switch fs := s.field(f); fs {
			case copyNone:
				return copyNone
			case copyDeep:
				sh = copyDeep
			}
		}
		return sh
	}
	return copyNone // aliases (copied as their target), tuples, unions
}

// field is the shape of a struct field as it holds its member.
func (s copyShapes) field(f *gomodel.Field) copyShape {
	elem := s.ref(f.Type)
	switch {
	case elem == copyNone:
		return copyNone
	case f.Presence == gomodel.PresencePointer:
		return copyDeep
	case f.Presence == gomodel.PresenceNullable && elem != copyValue:
		return copyNone
	}
	return elem
}

// ref is the shape of a use of a type.
func (s copyShapes) ref(r *gomodel.TypeRef) copyShape {
	r = r.Resolve()
	switch r.Kind {
	case gomodel.RefNamed:
		return s.named(r.Named)
	case gomodel.RefBuiltin:
		if r.Name == "json.RawMessage" {
			return copyNone
		}
		return copyValue
	case gomodel.RefPointer, gomodel.RefSlice, gomodel.RefMap:
		if s.ref(r.Elem) == copyNone {
			return copyNone
		}
		return copyDeep
	}
	return copyNone
}

// deepCopier returns a named type's deepCopyInto method, when it holds
// references and can be copied, and a message's DeepCopy.
func (g *generator) deepCopier(t *gomodel.Type) string {
	if g.copies == nil {
		g.copies = copyShapes{}
	}
	sh := g.copies.named(t)
	c := &code{}
	if t.Message != "" && sh != copyNone {
		c.line("")
		c.line("// DeepCopy returns a copy of m that shares nothing with it but strings,")
		c.line("// which are immutable: watch feeds decode a change once and give each")
		c.line("// informer a copy.")
		c.line("func (m *%s) DeepCopy() *%s {", t.Name, t.Name)
		c.line("if m == nil {")
		c.line("return nil")
		c.line("}")
		c.line("out := new(%s)", t.Name)
		if sh == copyDeep {
			c.line("m.deepCopyInto(out)")
		} else {
			c.line("*out = *m")
		}
		c.line("return out")
		c.line("}")
	}
	if sh != copyDeep {
		return c.b.String()
	}
	c.line("")
	if bt := g.blockType(t); bt != "" {
		c.line("func (m *%s) deepCopyInto(out *%s) {", t.Name, t.Name)
		c.line("m.deepCopyIntoWith(out, nil)")
		c.line("}")
		c.line("")
		c.line("// deepCopyIntoWith copies m into out with the pointer block from blocks")
		c.line("// (nil: a block of its own).")
		c.line("func (m *%s) deepCopyIntoWith(out *%s, blocks *jsonwire.Blocks[%s]) {", t.Name, t.Name, bt)
	} else {
		c.line("func (m *%s) deepCopyInto(out *%s) {", t.Name, t.Name)
	}
	switch t.Kind {
	case gomodel.KindStruct:
		c.line("*out = *m")
		g.copyStructFields(c, t)
	case gomodel.KindSlice, gomodel.KindMap:
		g.copyRef(c, &gomodel.TypeRef{Kind: gomodel.RefNamed, Named: t, Name: t.Name}, "(*m)", "(*out)", true)
	}
	c.line("}")
	return c.b.String()
}

// copyStructFields deep-copies the fields of a struct already assigned
// *out = *m: those holding references. Pointers to values without
// references share the struct's pointer block, as the decoder's do.
func (g *generator) copyStructFields(c *code, t *gomodel.Type) {
	bt := g.blockType(t)
	if bt != "" {
		c.line("var block *%s", bt)
	}
	for _, f := range t.Fields {
		if g.copies.field(f) != copyDeep {
			continue
		}
		src, dst := "m."+f.GoName, "out."+f.GoName
		if f.Presence != gomodel.PresencePointer {
			g.copyRef(c, f.Type, src, dst, false)
			continue
		}
		c.line("if %s != nil {", src)
		if slot, ok := g.blockSlot(t, f); ok {
			c.line("if block == nil {")
			c.line("block = blocks.New()")
			c.line("}")
			c.line("block.%s = *%s", slot, src)
			c.line("%s = &block.%s", dst, slot)
		} else {
			p := c.fresh("p")
			c.line("%s := new(%s)", p, gomodel.GoString(f.Type))
			g.copyRef(c, f.Type, "(*"+src+")", "(*"+p+")", false)
			c.line("%s = %s", dst, p)
		}
		c.line("}")
	}
}

// copyRef emits statements that make dst, of type r, a deep copy of src
// (both addressable expressions). Named types are copied by their
// deepCopyInto; in a named slice or map type's own method (self), its
// shape is spelled out instead. A nil src leaves dst as it is: every
// dst is a zero value (a new element, variable or pointee) or a field
// that *out = *m already set to the same nil.
func (g *generator) copyRef(c *code, r *gomodel.TypeRef, src, dst string, self bool) {
	goType := gomodel.GoString(r)
	r = r.Resolve()
	sh := g.copies.ref(r)
	if sh == copyValue {
		c.line("%s = %s", dst, src)
		return
	}
	elem := r.Elem
	kind := r.Kind
	if r.Kind == gomodel.RefNamed {
		t := r.Named
		if !self {
			c.line("%s.deepCopyInto(&%s)", src, dst)
			return
		}
		elem = t.Elem
		switch t.Kind {
		case gomodel.KindSlice:
			kind = gomodel.RefSlice
		case gomodel.KindMap:
			kind = gomodel.RefMap
		default: // structs always go through their method
			c.line("%s.deepCopyInto(&%s)", src, dst)
			return
		}
	}
	switch kind {
	case gomodel.RefPointer:
		c.line("if %s != nil {", src)
		p := c.fresh("p")
		c.line("%s := new(%s)", p, gomodel.GoString(elem))
		g.copyRef(c, elem, "(*"+src+")", "(*"+p+")", false)
		c.line("%s = %s", dst, p)
		c.line("}")
	case gomodel.RefSlice:
		s, i := c.fresh("s"), c.fresh("i")
		c.line("if %s != nil {", src)
		c.line("%s := make(%s, len(%s))", s, goType, src)
		switch bt := g.blockOf(elem); {
		case g.copies.ref(elem) == copyValue:
			c.line("copy(%s, %s)", s, src)
		case bt != "":
			bl := c.fresh("blocks")
			c.line("var %s jsonwire.Blocks[%s]", bl, bt)
			c.line("%s.Reserve(len(%s))", bl, src)
			c.line("for %s := range %s {", i, src)
			c.line("%s[%s].deepCopyIntoWith(&%s[%s], &%s)", src, i, s, i, bl)
			c.line("}")
		default:
			c.line("for %s := range %s {", i, src)
			g.copyRef(c, elem, src+"["+i+"]", s+"["+i+"]", false)
			c.line("}")
		}
		c.line("%s = %s", dst, s)
		c.line("}")
	case gomodel.RefMap:
		if g.copies.ref(elem) == copyValue {
			// maps.Clone copies the table as it is, without hashing again.
			c.line("%s = maps.Clone(%s)", dst, src)
			return
		}
		mm, k, v := c.fresh("m"), c.fresh("k"), c.fresh("v")
		c.line("if %s != nil {", src)
		c.line("%s := make(%s, len(%s))", mm, goType, src)
		bl := ""
		if bt := g.blockOf(elem); bt != "" {
			bl = c.fresh("blocks")
			c.line("var %s jsonwire.Blocks[%s]", bl, bt)
			c.line("%s.Reserve(len(%s))", bl, src)
		}
		c.line("for %s, %s := range %s {", k, v, src)
		e := c.fresh("e")
		c.line("var %s %s", e, gomodel.GoString(elem))
		if bl != "" {
			c.line("%s.deepCopyIntoWith(&%s, &%s)", v, e, bl)
		} else {
			g.copyRef(c, elem, v, e, false)
		}
		c.line("%s[%s] = %s", mm, k, e)
		c.line("}")
		c.line("%s = %s", dst, mm)
		c.line("}")
	}
}
