package gogen

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Generated decoders read JSON with a jsonwire.Decoder straight into the
// Go types, and reject exactly what the types cannot represent: malformed
// JSON, values of a JSON type the Go type does not hold, a missing
// required member or tuple element, a member a closed struct does not
// declare, null where the Go type has no null, numbers out of the Go
// type's range. Everything else the schema says is left to the generated
// validators, which see a faithful Go image of the JSON.

// code accumulates generated statements with fresh variable names.
type code struct {
	b strings.Builder
	n int
	// blockOf, when set, names the pointer block type of the struct a
	// reference holds (generator.blockOf), so that the elements of a
	// slice share one array of blocks and those of a map chunks of them.
	blockOf func(*gomodel.TypeRef) string
}

// decodeElem decodes an element of a map into target: a struct with a
// pointer block draws its block from bl, the map's jsonwire.Blocks, when
// there is one.
func (c *code) decodeElem(elem *gomodel.TypeRef, target, bl string, fail func(string) string) {
	if bl == "" {
		c.decodeInto(elem, target, fail)
		return
	}
	c.line("if err := %s.decodeJSONWith(d, &%s); err != nil {", target, bl)
	c.line("%s", fail("err"))
	c.line("}")
}

// elemBlocks declares the jsonwire.Blocks of a map's elements when they
// are structs with a pointer block, and returns its name.
func (c *code) elemBlocks(elem *gomodel.TypeRef) string {
	if c.blockOf == nil {
		return ""
	}
	bt := c.blockOf(elem)
	if bt == "" {
		return ""
	}
	bl := c.fresh("blocks")
	c.line("var %s jsonwire.Blocks[%s]", bl, bt)
	return bl
}

func (c *code) line(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
	c.b.WriteByte('\n')
}

// capture runs emit and returns the statements it wrote instead of
// keeping them, so that callers can leave out empty blocks and unused
// variables.
func (c *code) capture(emit func()) string {
	var saved strings.Builder
	saved.WriteString(c.b.String())
	c.b.Reset()
	emit()
	out := c.b.String()
	c.b.Reset()
	c.b.WriteString(saved.String())
	return out
}

// raw appends statements captured earlier.
func (c *code) raw(stmts string) { c.b.WriteString(stmts) }

// uses reports whether generated statements mention a variable.
func uses(stmts, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(stmts)
}

// fresh returns a new variable name with the given prefix.
func (c *code) fresh(prefix string) string {
	c.n++
	return prefix + strconv.Itoa(c.n)
}

// hasDecoder reports whether a named type gets a generated decodeJSON
// method: every kind but aliases.
func hasDecoder(t *gomodel.Type) bool { return t.Kind != gomodel.KindAlias }

// jsonTypeName names the JSON type a Go type reference holds, for error
// messages ("expected string, but got null").
func jsonTypeName(r *gomodel.TypeRef) string {
	r = r.Resolve()
	switch r.Kind {
	case gomodel.RefSlice:
		return "array"
	case gomodel.RefMap:
		return "object"
	case gomodel.RefPointer:
		return jsonTypeName(r.Elem)
	case gomodel.RefNamed:
		t := r.Named
		switch t.Kind {
		case gomodel.KindStruct, gomodel.KindMap, gomodel.KindTaggedUnion:
			return "object"
		case gomodel.KindSlice, gomodel.KindTuple:
			return "array"
		case gomodel.KindEnum, gomodel.KindScalar:
			return jsonTypeName(t.Elem)
		}
		return "value"
	case gomodel.RefBuiltin:
		switch r.Name {
		case "string", "time.Time":
			return "string"
		case "int64", "int32", "uint32", "uint64":
			return "integer"
		case "float64", "float32":
			return "number"
		case "bool":
			return "boolean"
		}
	}
	return "value"
}

// builtinReaders maps builtin Go types to the jsonwire.Decoder method that
// reads them.
var builtinReaders = map[string]string{
	"string": "String", "time.Time": "DateTime", "int64": "Int64", "int32": "Int32", "uint32": "Uint32",
	"uint64": "Uint64", "float64": "Float64", "float32": "Float32", "bool": "Bool", "json.RawMessage": "Raw",
}

// decodeInto emits statements that decode the next value into target, an
// addressable expression of type r. fail turns an error expression into
// the statement that returns it.
func (c *code) decodeInto(r *gomodel.TypeRef, target string, fail func(err string) string) {
	goType := gomodel.GoString(r)
	r = r.Resolve()
	switch r.Kind {
	case gomodel.RefNamed:
		c.line("if err := %s.decodeJSON(d); err != nil {", target)
		c.line("%s", fail("err"))
		c.line("}")
	case gomodel.RefBuiltin:
		v := c.fresh("v")
		c.line("%s, err := d.%s()", v, builtinReaders[r.Name])
		c.line("if err != nil {")
		c.line("%s", fail("err"))
		c.line("}")
		c.line("%s = %s", target, v)
	case gomodel.RefExternal:
		raw := c.fresh("raw")
		c.line("%s, err := d.RawBytes()", raw)
		c.line("if err != nil {")
		c.line("%s", fail("err"))
		c.line("}")
		c.line("if err := json.Unmarshal(%s, %s); err != nil {", raw, addr(target))
		c.line("%s", fail("jsonwire.External(err)"))
		c.line("}")
	case gomodel.RefPointer:
		c.line("if d.Null() {")
		c.line("%s = nil", target)
		c.line("} else {")
		p := c.fresh("p")
		c.line("%s := new(%s)", p, gomodel.GoString(r.Elem))
		c.decodeInto(r.Elem, "(*"+p+")", fail)
		c.line("%s = %s", target, p)
		c.line("}")
	case gomodel.RefSlice:
		c.decodeSlice(goType, r.Elem, target, true, fail)
	case gomodel.RefMap:
		c.decodeMap(goType, r.Key, r.Elem, target, true, fail)
	}
}

// sliceBuffer is how many elements an array decodes into a buffer on the
// stack before its slice is made: arrays up to that length get one
// allocation of exactly their length, not a series of growing ones.
// Elements of builtin types (16 bytes for a string, 24 for a time) get a
// longer buffer, since lists of names, numbers or times are often longer
// than 8 and their buffer still stays within a few hundred bytes.
func sliceBuffer(elem *gomodel.TypeRef) int {
	if elem.Resolve().Kind == gomodel.RefBuiltin {
		return 32
	}
	return 8
}

// decodeSlice decodes an array, or with null, null as a nil slice. The
// elements are decoded into a stack buffer, and the slice is made once
// at the array's end with exactly their number (longer arrays grow on
// the heap meanwhile); the buffer never leaves the function, since only
// a copy of it is stored.
func (c *code) decodeSlice(goType string, elem *gomodel.TypeRef, target string, null bool, fail func(string) string) {
	if null {
		c.line("if d.Null() {")
		c.line("%s = nil", target)
		c.line("} else {")
	}
	c.line("if err := d.ArrayStart(); err != nil {")
	c.line("%s", fail("err"))
	c.line("}")
	buf, tmp, s, i, zero := c.fresh("buf"), c.fresh("tmp"), c.fresh("s"), c.fresh("i"), c.fresh("zero")
	c.line("var %s [%d]%s", buf, sliceBuffer(elem), gomodel.GoString(elem))
	c.line("%s := %s[:0]", tmp, buf)
	c.line("var %s %s", zero, gomodel.GoString(elem))
	if bt := c.elemBlockType(elem); bt != "" {
		c.decodeStagedElems(goType, bt, sliceBuffer(elem), tmp, s, i, zero, target, fail)
		if null {
			c.line("}")
		}
		return
	}
	c.line("for %s := 0; d.NextItem(); %s++ {", i, i)
	c.line("%s = append(%s, %s)", tmp, tmp, zero)
	c.decodeInto(elem, tmp+"["+i+"]", func(err string) string {
		return fail("jsonwire.WithinIndex(" + err + ", " + i + ")")
	})
	c.line("}")
	c.line("if err := d.Err(); err != nil {")
	c.line("%s", fail("err"))
	c.line("}")
	c.line("%s := make(%s, len(%s))", s, goType, tmp)
	c.line("copy(%s, %s)", s, tmp)
	c.line("%s = %s", target, s)
	if null {
		c.line("}")
	}
}

// decodeStagedElems is the loop of decodeSlice for elements that are
// structs with a pointer block: each element is decoded staged
// (decodeJSONStaged), its block and the bits saying which of its pointer
// members are set kept beside it on the stack, and when the array's
// length is known the blocks of all elements that have any are made in
// one allocation of exactly their number and the elements pointed at
// them (pointInto): an array of n such structs costs two allocations,
// its slice and its blocks.
func (c *code) decodeStagedElems(goType, bt string, size int, tmp, s, i, zero, target string, fail func(string) string) {
	bbuf, btmp, hbuf, htmp, bzero := c.fresh("bbuf"), c.fresh("btmp"), c.fresh("hbuf"), c.fresh("htmp"), c.fresh("bzero")
	n, bs, j := c.fresh("n"), c.fresh("bs"), c.fresh("j")
	c.line("var %s [%d]%s", bbuf, size, bt)
	c.line("%s := %s[:0]", btmp, bbuf)
	c.line("var %s [%d]uint64", hbuf, size)
	c.line("%s := %s[:0]", htmp, hbuf)
	c.line("var %s %s", bzero, bt)
	c.line("%s := 0", n)
	c.line("for %s := 0; d.NextItem(); %s++ {", i, i)
	c.line("%s = append(%s, %s)", tmp, tmp, zero)
	c.line("%s = append(%s, %s)", btmp, btmp, bzero)
	c.line("%s = append(%s, 0)", htmp, htmp)
	c.line("err := %s[%s].decodeJSONStaged(d, &%s[%s], &%s[%s])", tmp, i, btmp, i, htmp, i)
	c.line("if %s[%s] != 0 {", htmp, i)
	c.line("%s++", n)
	c.line("}")
	c.line("if err != nil {")
	c.line("%s", fail("jsonwire.WithinIndex(err, "+i+")"))
	c.line("}")
	c.line("}")
	c.line("if err := d.Err(); err != nil {")
	c.line("%s", fail("err"))
	c.line("}")
	c.line("%s := make(%s, len(%s))", s, goType, tmp)
	c.line("copy(%s, %s)", s, tmp)
	c.line("if %s > 0 {", n)
	c.line("%s := make([]%s, %s)", bs, bt, n)
	c.line("%s := 0", j)
	c.line("for %s := range %s {", i, s)
	c.line("if %s[%s] != 0 {", htmp, i)
	c.line("%s[%s] = %s[%s]", bs, j, btmp, i)
	c.line("%s[%s].pointInto(&%s[%s], %s[%s])", s, i, bs, j, htmp, i)
	c.line("%s++", j)
	c.line("}")
	c.line("}")
	c.line("}")
	c.line("%s = %s", target, s)
}

// elemBlockType is the pointer block type of a slice's elements, "" when
// they are not structs with one.
func (c *code) elemBlockType(elem *gomodel.TypeRef) string {
	if c.blockOf == nil {
		return ""
	}
	return c.blockOf(elem)
}

// decodeMap decodes an object of uniform members, or with null, null as
// a nil map.
func (c *code) decodeMap(goType string, key, elem *gomodel.TypeRef, target string, null bool, fail func(string) string) {
	if null {
		c.line("if d.Null() {")
		c.line("%s = nil", target)
		c.line("} else {")
	}
	c.line("if err := d.ObjectStart(); err != nil {")
	c.line("%s", fail("err"))
	c.line("}")
	m, k, e := c.fresh("m"), c.fresh("k"), c.fresh("e")
	c.line("%s := %s{}", m, goType)
	bl := c.elemBlocks(elem)
	c.line("for d.NextMember() {")
	c.line("%s := d.KeyString()", k)
	c.line("if d.Err() != nil {")
	c.line("break")
	c.line("}")
	c.line("var %s %s", e, gomodel.GoString(elem))
	c.decodeElem(elem, e, bl, func(err string) string {
		return fail("jsonwire.Within(" + err + ", " + k + ")")
	})
	if key != nil {
		// A member's name is an enum's value: the names the enum does
		// not hold are left to the checks of propertyNames.
		c.line("%s[%s(%s)] = %s", m, gomodel.GoString(key), k, e)
	} else {
		c.line("%s[%s] = %s", m, k, e)
	}
	c.line("}")
	c.line("if err := d.Err(); err != nil {")
	c.line("%s", fail("err"))
	c.line("}")
	c.line("%s = %s", target, m)
	if null {
		c.line("}")
	}
}

// Pointer blocks let the pointer members of one struct whose targets hold
// no references (*string, *time.Time, a pointer to an enum or to a struct
// of scalars) share one allocation: a struct with two optional strings
// and an optional time allocates one block holding all three values, not
// three. The block is a type of its own, pointersOf<Type>, so that the
// elements of a slice or map of such structs share allocations: the
// decoder of a slice decodes its elements staged (decodeJSONStaged, the
// values in blocks on its stack) and, once it knows their number, makes
// the blocks of all of them in one array and points each element at its
// own (pointInto); the decoder of a map hands its elements' decoders
// (decodeJSONWith) one jsonwire.Blocks, which grows in chunks; the deep
// copy of a slice or map reserves one block per element
// (deepCopyIntoWith). The values keep each other alive, as members of one
// message do anyway. Decoder and deep copy share the rule and the type.

// blockFields are the members of a struct that live in its pointer block:
// optional members held by pointer whose target a plain assignment copies.
func (g *generator) blockFields(t *gomodel.Type) []*gomodel.Field {
	if t.Kind != gomodel.KindStruct {
		return nil
	}
	if g.copies == nil {
		g.copies = copyShapes{}
	}
	var fs []*gomodel.Field
	for _, f := range t.Fields {
		if len(fs) == maxBlockFields {
			break
		}
		if f.Presence == gomodel.PresencePointer && g.copies.ref(f.Type) == copyValue {
			fs = append(fs, f)
		}
	}
	return fs
}

// maxBlockFields is how many members a pointer block holds at most: the
// staged decoder marks the ones it set in the bits of one uint64. Further
// pointer members get an allocation each.
const maxBlockFields = 64

// blockType names a struct's pointer block type, "" when it has none.
func (g *generator) blockType(t *gomodel.Type) string {
	if len(g.blockFields(t)) == 0 {
		return ""
	}
	return "pointersOf" + t.Name
}

// blockOf is the pointer block type of the named struct a reference
// holds, "" when it is none or has none.
func (g *generator) blockOf(r *gomodel.TypeRef) string {
	if r = r.Resolve(); r.Kind != gomodel.RefNamed {
		return ""
	}
	return g.blockType(r.Named)
}

// blockDecl declares a struct's pointer block type.
func (g *generator) blockDecl(t *gomodel.Type) string {
	name := g.blockType(t)
	if name == "" {
		return ""
	}
	c := &code{}
	c.line("")
	c.line("// %s holds the values of the pointer members of %s:", name, t.Name)
	c.line("// one allocation for all of them, shared between the elements of a")
	c.line("// slice or map (see jsonwire.Blocks).")
	c.line("type %s struct {", name)
	for k, f := range g.blockFields(t) {
		c.line("v%d %s", k, gomodel.GoString(f.Type))
	}
	c.line("}")
	return c.b.String()
}

// blockSlot is a field's member of its struct's pointer block.
func (g *generator) blockSlot(t *gomodel.Type, f *gomodel.Field) (string, bool) {
	member, _, ok := g.blockSlotIndex(t, f)
	return member, ok
}

// blockSlotIndex is blockSlot with the member's index in the block, its
// bit in the staged decoder's has.
func (g *generator) blockSlotIndex(t *gomodel.Type, f *gomodel.Field) (string, int, bool) {
	for k, x := range g.blockFields(t) {
		if x == f {
			return "v" + strconv.Itoa(k), k, true
		}
	}
	return "", 0, false
}

// pointInto renders a struct's pointInto method: the pointer members a
// staged decode marked in has pointed at their values in block.
func (g *generator) pointInto(c *code, t *gomodel.Type, bt string) {
	c.line("")
	c.line("// pointInto points the pointer members of m that has marks at their")
	c.line("// values in block (see decodeJSONStaged).")
	c.line("func (m *%s) pointInto(block *%s, has uint64) {", t.Name, bt)
	for k, f := range g.blockFields(t) {
		c.line("if has&(1<<%d) != 0 {", k)
		c.line("m.%s = &block.v%d", f.GoName, k)
		c.line("}")
	}
	c.line("}")
}

// decodeMember emits the decoding of a struct member or tuple element held
// as its presence says; slot, if not nil, names the member of the struct's
// pointer block (the variable block) that holds a pointer member's value.
func (c *code) decodeMember(f *gomodel.Field, target string, slot func(*gomodel.Field) (string, int, bool), fail func(string) string) {
	switch f.Presence {
	case gomodel.PresencePointer:
		if f.Type.IsRaw() {
			// A tuple's raw element (its schema admits every value): null
			// is a value like any other, held as its JSON.
			p := c.fresh("p")
			c.line("%s := new(%s)", p, gomodel.GoString(f.Type))
			c.decodeInto(f.Type, "(*"+p+")", fail)
			c.line("%s = %s", target, p)
			return
		}
		c.line("if d.Null() {")
		if f.Required && f.Nullable {
			c.line("%s = nil", target)
			if _, bit, ok := lookupSlot(slot, f); ok {
				c.line("*has &^= 1 << %d", bit)
			}
		} else {
			c.line("%s", fail(fmt.Sprintf("jsonwire.NotNull(d, %q)", jsonTypeName(f.Type))))
		}
		c.line("} else {")
		p := c.fresh("p")
		if member, bit, ok := lookupSlot(slot, f); ok {
			// Staged (decodeJSONStaged): the value goes to the
			// block and its bit to has; pointInto sets target.
			c.line("%s := &block.%s", p, member)
			c.decodeInto(f.Type, "(*"+p+")", fail)
			c.line("*has |= 1 << %d", bit)
			c.line("}")
			return
		}
		c.line("%s := new(%s)", p, gomodel.GoString(f.Type))
		c.decodeInto(f.Type, "(*"+p+")", fail)
		c.line("%s = %s", target, p)
		c.line("}")
	case gomodel.PresenceOmitZero:
		if f.Type.IsRaw() {
			c.decodeInto(f.Type, target, fail)
			return
		}
		c.line("if d.Null() {")
		c.line("%s", fail(fmt.Sprintf("jsonwire.NotNull(d, %q)", jsonTypeName(f.Type))))
		c.line("}")
		switch r := f.Type.Resolve(); r.Kind {
		case gomodel.RefSlice:
			c.decodeSlice(gomodel.GoString(f.Type), r.Elem, target, false, fail)
		case gomodel.RefMap:
			c.decodeMap(gomodel.GoString(f.Type), gomodel.MapKey(r), r.Elem, target, false, fail)
		default:
			c.decodeInto(f.Type, target, fail)
		}
	case gomodel.PresenceNullable:
		c.line("if d.Null() {")
		c.line("%s = jsonwire.Null[%s]()", target, gomodel.GoString(f.Type))
		c.line("} else {")
		v := c.fresh("v")
		c.line("var %s %s", v, gomodel.GoString(f.Type))
		c.decodeInto(f.Type, v, fail)
		c.line("%s = jsonwire.Value(%s)", target, v)
		c.line("}")
	default:
		c.decodeInto(f.Type, target, fail)
	}
}

func lookupSlot(slot func(*gomodel.Field) (string, int, bool), f *gomodel.Field) (string, int, bool) {
	if slot == nil {
		return "", 0, false
	}
	return slot(f)
}

// decoder renders a named type's UnmarshalJSON and decodeJSON methods.
func (g *generator) decoder(t *gomodel.Type) string {
	if !hasDecoder(t) {
		return ""
	}
	c := &code{blockOf: g.blockOf}
	recv := "m"
	c.raw(g.blockDecl(t))
	c.line("")
	c.line("// UnmarshalJSON decodes %s, rejecting JSON its Go type cannot represent.", t.Name)
	c.line("func (%s *%s) UnmarshalJSON(data []byte) error {", recv, t.Name)
	c.line("d := jsonwire.NewDecoder(data)")
	c.line("if err := %s.decodeJSON(&d); err != nil {", recv)
	c.line("return err")
	c.line("}")
	c.line("return d.End()")
	c.line("}")
	if t.Message != "" {
		// Messages are what watch streams carry: the runtime decodes
		// the frames it shares between informers without a copy.
		c.line("")
		c.line("// UnmarshalSharedJSON is UnmarshalJSON for data that is never modified")
		c.line("// again: the strings decoded are slices of data, not of a copy of it")
		c.line("// (see jsonwire.NewSharedDecoder).")
		c.line("func (%s *%s) UnmarshalSharedJSON(data []byte) error {", recv, t.Name)
		c.line("d := jsonwire.NewSharedDecoder(data)")
		c.line("if err := %s.decodeJSON(&d); err != nil {", recv)
		c.line("return err")
		c.line("}")
		c.line("return d.End()")
		c.line("}")
	}
	c.line("")
	if bt := g.blockType(t); bt != "" {
		c.line("func (%s *%s) decodeJSON(d *jsonwire.Decoder) error {", recv, t.Name)
		c.line("return %s.decodeJSONWith(d, nil)", recv)
		c.line("}")
		c.line("")
		c.line("// decodeJSONWith decodes %s with its pointer block from blocks", t.Name)
		c.line("// (nil: a block of its own), made only when a pointer member is set.")
		c.line("func (%s *%s) decodeJSONWith(d *jsonwire.Decoder, blocks *jsonwire.Blocks[%s]) error {", recv, t.Name, bt)
		c.line("var block %s", bt)
		c.line("var has uint64")
		c.line("err := %s.decodeJSONStaged(d, &block, &has)", recv)
		c.line("if has != 0 {")
		c.line("p := blocks.New()")
		c.line("*p = block")
		c.line("%s.pointInto(p, has)", recv)
		c.line("}")
		c.line("return err")
		c.line("}")
		g.pointInto(c, t, bt)
		c.line("")
		c.line("// decodeJSONStaged decodes %s leaving its pointer members nil: their", t.Name)
		c.line("// values go to block and their bits to has, for pointInto, so that a")
		c.line("// slice's decoder can make the blocks of all its elements at once.")
		c.line("func (%s *%s) decodeJSONStaged(d *jsonwire.Decoder, block *%s, has *uint64) error {", recv, t.Name, bt)
	} else {
		c.line("func (%s *%s) decodeJSON(d *jsonwire.Decoder) error {", recv, t.Name)
	}
	ret := func(err string) string { return "return " + err }
	switch t.Kind {
	case gomodel.KindStruct:
		g.decodeStruct(c, t)
	case gomodel.KindTuple:
		g.decodeTuple(c, t)
	case gomodel.KindTaggedUnion:
		g.decodeTagged(c, t)
	case gomodel.KindUnion:
		c.line("raw, err := d.Raw()")
		c.line("if err != nil {")
		c.line("return err")
		c.line("}")
		c.line("m.raw = raw")
		c.line("return nil")
	case gomodel.KindMap:
		c.decodeMap(t.Name, t.Key, t.Elem, "*m", true, ret)
		c.line("return nil")
	case gomodel.KindSlice:
		c.decodeSlice(t.Name, t.Elem, "*m", true, ret)
		c.line("return nil")
	case gomodel.KindEnum:
		if base := t.Elem.Resolve(); base.Kind == gomodel.RefBuiltin && base.Name == "string" {
			// The constants' own strings, so that known values allocate nothing.
			c.line("b, err := d.StringBytes()")
			c.line("if err != nil {")
			c.line("return err")
			c.line("}")
			c.line("switch string(b) {")
			for _, v := range t.Enum {
				c.line("case %s:", v.Literal)
				c.line("*m = %s", v.GoName)
			}
			c.line("default:")
			c.line("*m = %s(b)", t.Name)
			c.line("}")
			c.line("return nil")
			break
		}
		fallthrough
	case gomodel.KindScalar:
		v := c.fresh("v")
		c.line("var %s %s", v, gomodel.GoString(t.Elem))
		c.decodeInto(t.Elem, v, ret)
		c.line("*m = %s(%s)", t.Name, v)
		c.line("return nil")
	}
	c.line("}")
	return c.b.String()
}

// decodeStruct decodes an object into a struct. Encoders (the generated
// ones, encoding/json) write a struct's members in declaration order, so
// the decoder first tries the member declared after the last one read,
// comparing the input with the comma and name as they write them
// (jsonwire's Ahead and Member), and only moves to the next member and reads and
// matches its name when that fails: data in any other order, with white
// space or escapes in names, or unknown members, decode exactly as
// before, by name.
func (g *generator) decodeStruct(c *code, t *gomodel.Type) {
	c.line("if err := d.ObjectStart(); err != nil {")
	c.line("return err")
	c.line("}")
	c.line("*m = %s{}", t.Name)
	var required []*gomodel.Field
	for _, f := range t.Fields {
		if f.Required {
			required = append(required, f)
		}
	}
	if len(required) > 0 {
		c.line("var seen [%d]bool", len(required))
	}
	c.line("next := 0")
	c.line("for {")
	c.line("field := -1")
	c.line("switch next {")
	for i, f := range t.Fields {
		if lit, ok := memberLiteral(f.JSONName); ok {
			c.line("case %d:", i)
			if i == 0 {
				// Only the first member can follow the '{'
				// directly, and only it has no comma before it.
				c.line("if d.Ahead(%d) == `%s` && d.FirstMember(%d) {", len(lit)-1, lit[1:], len(lit)-1)
			} else {
				c.line("if d.Ahead(%d) == `%s` && d.Member(%d) {", len(lit), lit, len(lit))
			}
			c.line("field = %d", i)
			c.line("}")
		}
	}
	c.line("}")
	c.line("if field < 0 {")
	c.line("if !d.NextMember() {")
	c.line("break")
	c.line("}")
	c.line("key := d.Key()")
	c.line("if d.Err() != nil {")
	c.line("break")
	c.line("}")
	if t.CaseInsensitive {
		c.line("switch jsonwire.FoldKey(string(key), %s) {", declared(t))
	} else {
		c.line("switch string(key) {")
	}
	for i, f := range t.Fields {
		c.line("case %q:", f.JSONName)
		c.line("field = %d", i)
	}
	c.line("default:")
	if t.Extra == nil {
		c.line("return jsonwire.Undeclared(d, key)")
	} else {
		c.line("k := string(key)")
		e := c.fresh("e")
		c.line("var %s %s", e, gomodel.GoString(t.Extra.Value))
		c.decodeInto(t.Extra.Value, e, func(err string) string {
			return "return jsonwire.Within(" + err + ", k)"
		})
		c.line("if m.%s == nil {", t.Extra.GoName)
		c.line("m.%s = map[string]%s{}", t.Extra.GoName, gomodel.GoString(t.Extra.Value))
		c.line("}")
		c.line("m.%s[k] = %s", t.Extra.GoName, e)
		c.line("continue")
	}
	c.line("}")
	c.line("}")
	c.line("switch field {")
	req := 0
	for i, f := range t.Fields {
		c.line("case %d:", i)
		if f.Required {
			c.line("seen[%d] = true", req)
			req++
		}
		name := f.JSONName
		c.decodeMember(f, "m."+f.GoName, func(f *gomodel.Field) (string, int, bool) { return g.blockSlotIndex(t, f) }, func(err string) string {
			return fmt.Sprintf("return jsonwire.Within(%s, %q)", err, name)
		})
	}
	c.line("}")
	c.line("next = field + 1")
	c.line("}")
	c.line("if err := d.Err(); err != nil {")
	c.line("return err")
	c.line("}")
	if len(required) > 0 {
		var all []string
		for i := range required {
			all = append(all, fmt.Sprintf("seen[%d]", i))
		}
		c.line("if !(%s) {", strings.Join(all, " && "))
		c.line("var missing []string")
		for i, f := range required {
			c.line("if !seen[%d] {", i)
			c.line("missing = append(missing, %q)", f.JSONName)
			c.line("}")
		}
		c.line("return jsonwire.Missing(d, missing...)")
		c.line("}")
	}
	c.line("return nil")
}

// memberLiteral is a member name as encoders write it after the member
// before it: a comma, the name quoted and its ':' (a raw Go string
// literal's text), for names of printable
// ASCII that no encoder escapes (encoding/json escapes '<', '>' and '&'
// too) and that hold no '`'; ok is false for others, which are always read
// by name.
func memberLiteral(name string) (string, bool) {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || strings.IndexByte("\"\\<>&`", c) >= 0 {
			return "", false
		}
	}
	return `,"` + name + `":`, true
}

func (g *generator) decodeTuple(c *code, t *gomodel.Type) {
	c.line("if err := d.ArrayStart(); err != nil {")
	c.line("return err")
	c.line("}")
	c.line("*m = %s{}", t.Name)
	c.line("n := 0")
	c.line("for ; d.NextItem(); n++ {")
	c.line("switch n {")
	fail := func(err string) string { return "return jsonwire.WithinIndex(" + err + ", n)" }
	minItems := 0
	for i, f := range t.Fields {
		if f.Required {
			minItems = i + 1
		}
		c.line("case %d:", i)
		c.decodeMember(f, "m."+f.GoName, nil, fail)
	}
	c.line("default:")
	if t.Rest != nil {
		e := c.fresh("e")
		c.line("var %s %s", e, gomodel.GoString(t.Rest))
		c.decodeInto(t.Rest, e, fail)
		c.line("m.Rest = append(m.Rest, %s)", e)
	} else {
		c.line("return jsonwire.TooMany(d, %d)", len(t.Fields))
	}
	c.line("}")
	c.line("}")
	c.line("if err := d.Err(); err != nil {")
	c.line("return err")
	c.line("}")
	if minItems > 0 {
		c.line("if n < %d {", minItems)
		c.line("return jsonwire.TooFew(d, %d, n)", minItems)
		c.line("}")
	}
	c.line("return nil")
}

func (g *generator) decodeTagged(c *code, t *gomodel.Type) {
	c.line("tag, err := d.Discriminator(%q, %v)", t.Discriminator, t.CaseInsensitive)
	c.line("if err != nil {")
	c.line("return err")
	c.line("}")
	c.line("*m = %s{}", t.Name)
	c.line("switch tag {")
	for _, v := range t.Variants {
		c.line("case %q:", v.Tag)
		c.line("m.%s = new(%s)", v.Name, gomodel.GoString(v.Type))
		c.line("return m.%s.decodeJSON(d)", v.Name)
	}
	c.line("}")
	c.line("if err := d.Skip(); err != nil {")
	c.line("return err")
	c.line("}")
	c.line("return jsonwire.Unknown(%q, tag)", t.Discriminator)
}

// variantDecoder renders the body of an untagged union's As<Variant>:
// the held JSON decoded strictly as the variant's type.
func (g *generator) variantDecoder(v *gomodel.Variant) string {
	c := &code{}
	c.line("var v %s", gomodel.GoString(v.Type))
	c.line("dec := jsonwire.NewDecoder(u.raw)")
	c.line("d := &dec")
	c.decodeInto(v.Type, "v", func(err string) string { return "return v, " + err })
	c.line("return v, d.End()")
	return c.b.String()
}
