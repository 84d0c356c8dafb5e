package gomodel

import (
	"errors"
	"fmt"
	"math/big"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
)

// Node is a schema node of a loaded contract.
type Node = contract.Node

// builder maps schemas to types, once per schema node.
type builder struct {
	pkg   *Package
	named map[*Node]*Type
	names nameSet
	errs  []error
	ci    bool // case-insensitive decoding for the message being mapped
	// messages are the messages' own schemas: what they refuse is about
	// the contract (a message must admit a value of some Go type).
	messages map[*Node]bool
	// mapping are the named types whose schemas are being mapped.
	mapping map[*Type]bool
	// shared, defs and digests share one type between identical schemas
	// (shared.go).
	shared  map[sharedKey]sharedType
	defs    map[[32]byte]*Node
	digests map[*Node][32]byte
}

// Build maps every message of a loaded contract to Go types. pkgName is the
// Go package name of the generated package.
func Build(c *contract.Contract, pkgName string) (*Package, error) {
	b := &builder{
		pkg:      &Package{Name: pkgName, Contract: c, Messages: map[string]*Type{}},
		messages: map[*Node]bool{},
		named:    map[*Node]*Type{},
		names:    nameSet{},
		mapping:  map[*Type]bool{},
		shared:   map[sharedKey]sharedType{},
		defs:     map[[32]byte]*Node{},
		digests:  map[*Node][32]byte{},
	}
	for _, r := range ReservedNames {
		b.names[r] = true
	}
	for _, m := range c.Methods {
		b.names["Method"+m.Name] = true
	}
	for _, t := range c.Topics {
		for _, n := range []string{"Topic" + t.Name, "Serve" + t.Name, "Watch" + t.Name, "New" + t.Name + "Publisher"} {
			b.names[n] = true
		}
		for _, sel := range t.Selectors {
			b.names["Select"+GoName(sel.Field)] = true
		}
	}
	// Messages claim their names first, so that a schema referenced from
	// elsewhere is still named after its message.
	var claimed []*contract.Message
	for _, m := range c.Messages {
		if b.names[m.Name] {
			b.fail(m.Schema, "message name %s collides with a name the generated package declares (%s, Method<Name>, and for topics Topic<Name>, Serve<Name>, Watch<Name>, New<Name>Publisher, Select<Selector>): rename the message", m.Name, strings.Join(ReservedNames, ", "))
			continue
		}
		b.names[m.Name] = true
		if _, shared := b.named[m.Schema]; shared {
			continue
		}
		t := &Type{Name: m.Name, Schema: m.Schema, Source: m.Schema.Where(), Doc: docOf(m.Schema), Message: m.Name}
		b.named[m.Schema] = t
		b.pkg.Types = append(b.pkg.Types, t)
		b.pkg.Messages[m.Name] = t
		claimed = append(claimed, m)
	}
	var roots []*Node
	for _, m := range c.Messages {
		b.messages[m.Schema] = true
		roots = append(roots, m.Schema)
	}
	b.definitions(roots)
	for _, m := range claimed {
		b.ci = m.CaseInsensitive
		t := b.pkg.Messages[m.Name]
		b.mapping[t] = true
		b.mapSchema(m.Schema, m.Name, t)
		delete(b.mapping, t)
	}
	for _, m := range c.Messages {
		if _, ok := b.pkg.Messages[m.Name]; ok || !b.names[m.Name] {
			continue
		}
		target := b.named[m.Schema]
		if target == nil {
			continue
		}
		t := &Type{Name: m.Name, Kind: KindAlias, Schema: m.Schema, Source: m.Schema.Where(), Elem: namedRef(target), Message: m.Name, Nullable: target.Nullable}
		b.pkg.Types = append(b.pkg.Types, t)
		b.pkg.Messages[m.Name] = t
	}
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	b.breakValueCycles()
	sort.SliceStable(b.pkg.Types, func(i, j int) bool { return b.pkg.Types[i].Name < b.pkg.Types[j].Name })
	return b.pkg, nil
}

// fail records an error at a schema node's source.
func (b *builder) fail(n *Node, format string, args ...any) {
	e := &contract.Error{Message: fmt.Sprintf(format, args...)}
	if s := n.Source(); s != nil {
		if s.Doc != nil {
			e.File = s.Doc.Path
		}
		e.Line, e.Col, e.Pointer = s.Line, s.Col, s.Pointer
	}
	b.errs = append(b.errs, e)
}

// warn records a lossy choice at a schema node's source: the generator
// goes on with the closest faithful type.
func (b *builder) warn(n *Node, format string, args ...any) {
	b.pkg.Warnings = append(b.pkg.Warnings, Warning(n, fmt.Sprintf(format, args...)))
}

// Warning formats a warning about schema node n as errors are formatted:
// file, line, column and JSON pointer, then the message.
func Warning(n *Node, msg string) string {
	e := &contract.Error{Message: "warning: " + msg}
	if s := n.Source(); s != nil {
		if s.Doc != nil {
			e.File = s.Doc.Path
		}
		e.Line, e.Col, e.Pointer = s.Line, s.Col, s.Pointer
	}
	return e.Error()
}

// Builtin type references.
var (
	refString  = &TypeRef{Kind: RefBuiltin, Name: "string"}
	refInt64   = &TypeRef{Kind: RefBuiltin, Name: "int64"}
	refFloat64 = &TypeRef{Kind: RefBuiltin, Name: "float64"}
	refBool    = &TypeRef{Kind: RefBuiltin, Name: "bool"}
	refTime    = &TypeRef{Kind: RefBuiltin, Name: "time.Time", Import: "time"}
	refRaw     = &TypeRef{Kind: RefBuiltin, Name: "json.RawMessage", Import: "encoding/json"}
)

func namedRef(t *Type) *TypeRef { return &TypeRef{Kind: RefNamed, Named: t, Name: t.Name} }

// IsRaw reports whether r is raw JSON, directly or through aliases.
func (r *TypeRef) IsRaw() bool {
	r = r.Resolve()
	return r.Kind == RefBuiltin && r.Name == refRaw.Name
}

// Resolve follows aliases of named types to the reference they stand for.
func (r *TypeRef) Resolve() *TypeRef {
	for i := 0; i < 64 && r.Kind == RefNamed && r.Named != nil && r.Named.Kind == KindAlias; i++ {
		r = r.Named.Elem
	}
	return r
}

// Nilable reports whether the Go type has nil as a value that encodes as
// null: slices, maps, raw JSON and pointers.
func (r *TypeRef) Nilable() bool {
	r = r.Resolve()
	switch r.Kind {
	case RefSlice, RefMap, RefPointer:
		return true
	case RefBuiltin:
		return r.Name == refRaw.Name
	case RefNamed:
		return r.Named != nil && (r.Named.Kind == KindMap || r.Named.Kind == KindSlice)
	}
	return false
}

// presence decides how a member's states are held.
func presence(r *TypeRef, required, nullable bool) Presence {
	switch {
	case required && !nullable:
		return PresenceValue
	case required:
		if r.Nilable() {
			return PresenceValue
		}
		return PresencePointer
	case !nullable:
		if r.Nilable() {
			return PresenceOmitZero
		}
		return PresencePointer
	case r.IsRaw():
		return PresenceOmitZero
	}
	return PresenceNullable
}

// elemRef is the type of an array item or map value that may be null.
func elemRef(r *TypeRef, nullable bool) *TypeRef {
	if nullable && !r.Nilable() {
		return &TypeRef{Kind: RefPointer, Elem: r}
	}
	return r
}

// inert keywords beside a "$ref" do not change the Go type: annotations and
// checks that only narrow values of the same type.
var inert = map[string]bool{
	"$ref": true, "title": true, "description": true, "$comment": true, "examples": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "default": true, "x-go-name": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true, "minItems": true, "maxItems": true,
	"uniqueItems": true, "contains": true, "minContains": true, "maxContains": true, "minProperties": true,
	"maxProperties": true, "required": true, "dependentRequired": true, "dependentSchemas": true, "not": true,
	"if": true, "then": true, "else": true, "propertyNames": true, "contentEncoding": true, "contentMediaType": true,
	"contentSchema": true, "$defs": true, "definitions": true,
}

// constraintOnly reports whether a oneOf/anyOf branch only narrows values
// (e.g. {required: [a]}), so it takes no part in the Go type.
func constraintOnly(n *Node) bool {
	if n.Kind == contract.KindBool {
		return n.Bool
	}
	for _, k := range n.Keys {
		if k == "$ref" || !inert[k] {
			if strings.HasPrefix(k, "x-") && k != "x-go-type" {
				continue
			}
			return false
		}
	}
	return true
}

// isNullSchema reports whether a oneOf/anyOf branch admits only null:
// {type: "null"}, {const: null}, {enum: [null]}, or a "$ref" to one with
// only inert members beside it ({$ref: "#/$defs/nullRule"}).
func isNullSchema(n *Node) bool {
	for i := 0; i < 64 && pureRef(n); i++ {
		n = n.Ref
	}
	if n.Kind != contract.KindObject {
		return false
	}
	if t := n.Get("type"); t != nil && t.Kind == contract.KindString && t.Text == "null" {
		return true
	}
	if c := n.Get("const"); c != nil && c.Kind == contract.KindNull {
		return true
	}
	if e := n.Get("enum"); e != nil && len(e.Items) == 1 && e.Items[0].Kind == contract.KindNull {
		return true
	}
	return false
}

// pureRef reports whether n is a "$ref" with only inert members beside it.
func pureRef(n *Node) bool {
	if n.Kind != contract.KindObject || n.Ref == nil {
		return false
	}
	for _, k := range n.Keys {
		if !inert[k] && !(strings.HasPrefix(k, "x-") && k != "x-go-type") {
			return false
		}
	}
	return true
}

// namedFor returns the named type of a referenced schema, creating it.
func (b *builder) namedFor(target *Node) *Type {
	if t := b.named[target]; t != nil {
		return t
	}
	name := b.typeNameFor(target)
	if b.names[name] {
		// Another file has a schema of that name: qualify it with the
		// type of its own file's root, if that has one.
		if src := target.Source(); src != nil && src.Doc != nil {
			for _, t := range b.pkg.Types {
				if s := t.Schema.Source(); s != nil && s.Doc == src.Doc && s.Pointer == "" && !b.names[t.Name+name] {
					name = t.Name + name
					break
				}
			}
		}
	}
	t := &Type{Name: b.names.unique(name), Schema: target, Source: target.Where(), Doc: docOf(target)}
	b.named[target] = t
	b.pkg.Types = append(b.pkg.Types, t)
	b.mapping[t] = true
	b.mapSchema(target, t.Name, t)
	delete(b.mapping, t)
	return t
}

// typeNameFor names a referenced schema after where it is defined.
func (b *builder) typeNameFor(target *Node) string {
	if x := target.Get("x-go-name"); x != nil && x.Kind == contract.KindString {
		return x.Text
	}
	src := target.Source()
	tokens := strings.Split(src.Pointer, "/")
	last := ""
	if len(tokens) > 1 {
		last = strings.NewReplacer("~1", "/", "~0", "~").Replace(tokens[len(tokens)-1])
	}
	if src.Pointer == "" && src.Doc != nil {
		if t := target.Get("title"); t != nil && t.Kind == contract.KindString && len(words(t.Text)) <= 3 {
			return GoName(t.Text)
		}
		base := path.Base(src.Doc.URL)
		for _, ext := range []string{".json", ".yaml", ".yml", ".schema"} {
			base = strings.TrimSuffix(base, ext)
		}
		return GoName(base)
	}
	return GoName(last)
}

// newType creates a named type for an inline schema.
func (b *builder) ensureNamed(t *Type, n *Node, name string) *Type {
	if t != nil {
		return t
	}
	if x := n.Get("x-go-name"); x != nil && x.Kind == contract.KindString {
		name = x.Text
	}
	t = &Type{Name: b.names.unique(name), Schema: n, Source: n.Where(), Doc: docOf(n)}
	b.named[n] = t
	b.pkg.Types = append(b.pkg.Types, t)
	return t
}

// finish returns r for an inline use, or makes the named type t stand for r.
func (b *builder) finish(t *Type, r *TypeRef, nullable bool) (*TypeRef, bool) {
	if t == nil {
		return r, nullable
	}
	t.Nullable = nullable
	switch {
	case r.Kind == RefBuiltin && r.Import == "":
		t.Kind = KindScalar
	case r.Kind == RefSlice:
		t.Kind = KindSlice
		r = r.Elem
	case r.Kind == RefMap:
		t.Kind, t.Key = KindMap, r.Key
		r = r.Elem
	default:
		t.Kind = KindAlias
	}
	t.Elem = r
	return namedRef(t), nullable
}

// mapSchema maps schema n. With t, n is mapped as the named type t;
// without, the result is an inline type, creating a named type called name
// (made unique) when the shape needs one. It returns whether n admits null
// besides the type's values.
func (b *builder) mapSchema(n *Node, name string, t *Type) (*TypeRef, bool) {
	if t == nil {
		if nt := b.named[n]; nt != nil {
			return namedRef(nt), nt.Nullable
		}
		if n.Kind == contract.KindObject {
			return b.mapShared(n, name)
		}
	}
	return b.mapNode(n, name, t)
}

// mapNode is [builder.mapSchema] without sharing.
func (b *builder) mapNode(n *Node, name string, t *Type) (*TypeRef, bool) {
	if n.Kind == contract.KindBool {
		if !n.Bool {
			b.fail(n, "the schema false admits no value, so it has no Go type; leave the member out instead")
		}
		if b.messages[n] {
			return b.anyValue(n, n, name, t)
		}
		return b.finish(t, refRaw, false)
	}
	if x := n.Get("x-go-type"); x != nil {
		r, ok := b.external(x)
		if !ok {
			return b.finish(t, refRaw, false)
		}
		return b.finish(t, r, false)
	}
	if pureRef(n) {
		ref := n.Ref
		for i := 0; i < 64 && pureRef(ref) && !ref.Has("x-go-name") && b.named[ref] == nil; i++ {
			ref = ref.Ref
		}
		target := b.namedFor(ref)
		if t != nil && b.messages[n] && target.Nullable && !nilIsNull(target) {
			// A message that refers to a nullable type whose Go type
			// has no nil: a union of that type and null.
			t.Kind, t.Nullable = KindUnion, true
			vname := GoName(jsonTypeName(target))
			t.Variants = append(t.Variants, &Variant{Name: vname, Type: namedRef(target), Schema: ref})
			return namedRef(t), true
		}
		return b.finish(t, namedRef(target), target.Nullable)
	}
	v, ok := b.view(n)
	if !ok {
		return b.finish(t, refRaw, false)
	}
	if r, nullable, handled := b.union(v, n, name, t); handled {
		return r, nullable
	}
	types, nullable, ok := b.types(v)
	if !ok {
		return b.finish(t, refRaw, false)
	}
	if nullable && b.messages[n] && len(types) <= 1 && !nilHoldsNull(v, types) {
		// A message is a Go value handed to a handler: one whose schema
		// admits null, and whose Go type would have no nil, is a union,
		// which holds null beside the values of its one type (if any),
		// so that null decodes, validates and encodes as the schema says.
		return b.multiType(v, n, name, t, types, true)
	}
	if enum, base, enull, isEnum := b.enumOf(v, types); isEnum {
		return b.enum(v, n, name, t, base, enum, nullable || enull)
	}
	switch len(types) {
	case 0:
		if !nullable && b.messages[n] {
			return b.anyValue(v, n, name, t)
		}
		if nullable {
			b.warn(n, "a schema that admits only null has no Go type of its own: the Go type is json.RawMessage")
		}
		return b.finish(t, refRaw, false)
	case 1:
	default:
		return b.multiType(v, n, name, t, types, nullable)
	}
	switch types[0] {
	case "object":
		return b.object(v, n, name, t, nullable)
	case "array":
		return b.array(v, n, name, t, nullable)
	case "string":
		if f := v.Get("format"); f != nil && f.Text == "date-time" {
			return b.finish(t, refTime, nullable)
		}
		return b.finish(t, refString, nullable)
	case "integer":
		if f := v.Get("format"); f != nil {
			switch f.Text {
			case "int32", "uint32", "uint64":
				return b.finish(t, &TypeRef{Kind: RefBuiltin, Name: f.Text}, nullable)
			}
		}
		return b.finish(t, refInt64, nullable)
	case "number":
		if f := v.Get("format"); f != nil && f.Text == "float" {
			return b.finish(t, &TypeRef{Kind: RefBuiltin, Name: "float32"}, nullable)
		}
		return b.finish(t, refFloat64, nullable)
	case "boolean":
		return b.finish(t, refBool, nullable)
	}
	b.fail(n, "unknown type %q", types[0])
	return b.finish(t, refRaw, false)
}

// external reads an x-go-type: "string", "time.Duration",
// "encoding/json.RawMessage", "k8s.io/api/core/v1.Pod".
func (b *builder) external(x *Node) (*TypeRef, bool) {
	if x.Kind != contract.KindString || x.Text == "" {
		b.fail(x, "x-go-type must be a Go type: a builtin (string), or an import path and a name (k8s.io/api/core/v1.Pod)")
		return nil, false
	}
	s := x.Text
	if s == "encoding/json.RawMessage" || s == "json.RawMessage" {
		return refRaw, true
	}
	i := strings.LastIndex(s, ".")
	if i < 0 {
		return &TypeRef{Kind: RefExternal, Name: s}, true
	}
	imp, name := s[:i], s[i+1:]
	if imp == "" || name == "" || GoName(name) != name && strings.ToUpper(name[:1]) != name[:1] {
		b.fail(x, "x-go-type %q must end in an exported type name", s)
		return nil, false
	}
	return &TypeRef{Kind: RefExternal, Name: name, Import: imp}, true
}

// view merges a schema with what it includes by "$ref" and "allOf" into
// one object of keywords. oneOf/anyOf stay, to be mapped as unions.
func (b *builder) view(n *Node) (*Node, bool) {
	if n.Ref == nil && n.Get("allOf") == nil {
		return n, true
	}
	var parts []*Node
	state := map[*Node]int{}
	var walk func(x *Node) bool
	walk = func(x *Node) bool {
		if x.Kind == contract.KindBool {
			if !x.Bool {
				b.warn(x, "allOf includes false, which admits no value: the Go type is json.RawMessage, and validation refuses every value")
				return false
			}
			return true
		}
		switch state[x] {
		case 1:
			b.fail(x, "this schema includes itself through $ref/allOf, which describes no finite value")
			return false
		case 2:
			return true
		}
		state[x] = 1
		parts = append(parts, x)
		if x.Ref != nil && !walk(x.Ref) {
			return false
		}
		if all := x.Get("allOf"); all != nil {
			for _, it := range all.Items {
				if !walk(it) {
					return false
				}
			}
		}
		state[x] = 2
		return true
	}
	if !walk(n) {
		return nil, false
	}
	m := &Node{Kind: contract.KindObject, Origin: n, Root: n.Root, Pointer: n.Pointer, Doc: n.Doc}
	set := func(k string, v *Node) {
		for i, key := range m.Keys {
			if key == k {
				m.Values[i] = v
				return
			}
		}
		m.Keys = append(m.Keys, k)
		m.Values = append(m.Values, v)
	}
	for pi, p := range parts {
		for i, k := range p.Keys {
			v := p.Values[i]
			cur := m.Get(k)
			switch k {
			case "$ref", "allOf", "$defs", "definitions":
				continue
			case "properties", "patternProperties":
				if cur == nil {
					set(k, v)
					continue
				}
				merged := &Node{Kind: contract.KindObject, Origin: cur.Origin, Root: cur.Root, Pointer: cur.Pointer, Doc: cur.Doc}
				merged.Keys = append(merged.Keys, cur.Keys...)
				merged.Values = append(merged.Values, cur.Values...)
				for j, name := range v.Keys {
					if old := merged.Get(name); old != nil {
						both := &Node{Kind: contract.KindObject, Origin: old, Root: old.Root, Pointer: old.Pointer, Doc: old.Doc,
							Keys: []string{"allOf"}, Values: []*Node{{Kind: contract.KindArray, Items: []*Node{old, v.Values[j]}}}}
						for x, key := range merged.Keys {
							if key == name {
								merged.Values[x] = both
							}
						}
						continue
					}
					merged.Keys = append(merged.Keys, name)
					merged.Values = append(merged.Values, v.Values[j])
				}
				set(k, merged)
			case "required":
				if cur == nil {
					set(k, v)
					continue
				}
				merged := &Node{Kind: contract.KindArray, Origin: cur.Origin}
				merged.Items = append(merged.Items, cur.Items...)
				merged.Items = append(merged.Items, v.Items...)
				set(k, merged)
			case "type":
				if cur == nil {
					set(k, v)
					continue
				}
				both := intersectTypes(typeList(cur), typeList(v))
				if len(both) == 0 {
					b.warn(v, "allOf combines schemas of types %v and %v, which no value satisfies: the Go type is json.RawMessage, and validation refuses every value", typeList(cur), typeList(v))
					return nil, false
				}
				tn := &Node{Kind: contract.KindArray, Origin: v}
				for _, s := range both {
					tn.Items = append(tn.Items, &Node{Kind: contract.KindString, Text: s})
				}
				set(k, tn)
			case "additionalProperties":
				if cur == nil || v.Kind == contract.KindBool && !v.Bool {
					set(k, v)
				}
			case "unevaluatedProperties":
				// A part that evaluates every member (true, or a schema)
				// leaves none unevaluated for another part's false: the
				// Go type stays open, and jsonschema/v5, which checks
				// unevaluatedProperties, decides.
				switch {
				case cur == nil:
					set(k, v)
				case isFalse(cur) != isFalse(v):
					set(k, &Node{Kind: contract.KindBool, Bool: true, Origin: v})
				}
			case "oneOf", "anyOf":
				if cur != nil {
					b.warn(v, "allOf combines several %s, whose product has no single Go type: the Go type is json.RawMessage (merge them into one %s for a typed union)", k, k)
					return nil, false
				}
				set(k, v)
			default:
				if cur == nil || pi == 0 {
					set(k, v)
				}
			}
		}
	}
	return m, true
}

func typeList(n *Node) []string {
	if n.Kind == contract.KindString {
		return []string{n.Text}
	}
	var out []string
	for _, it := range n.Items {
		out = append(out, it.Text)
	}
	return out
}

func intersectTypes(a, b []string) []string {
	has := func(list []string, t string) bool {
		for _, x := range list {
			if x == t {
				return true
			}
		}
		return false
	}
	var out []string
	for _, t := range a {
		switch {
		case has(b, t):
			out = append(out, t)
		case t == "integer" && has(b, "number"):
			out = append(out, "integer")
		case t == "number" && has(b, "integer"):
			out = append(out, "integer")
		}
	}
	return out
}

// keyword families for inferring a type a schema does not state.
var (
	objectKeywords = []string{"properties", "additionalProperties", "patternProperties", "required", "minProperties", "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas", "unevaluatedProperties"}
	arrayKeywords  = []string{"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems"}
	stringKeywords = []string{"minLength", "maxLength", "pattern"}
	numberKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)

// types returns the JSON types a schema admits besides null, and whether it
// admits null. A schema without "type" takes the type its keywords or
// enum/const values imply.
func (b *builder) types(v *Node) ([]string, bool, bool) {
	var list []string
	if t := v.Get("type"); t != nil {
		list = typeList(t)
	} else if vals := enumValues(v); vals != nil {
		seen := map[string]bool{}
		for _, e := range vals {
			k := jsonType(e)
			if !seen[k] {
				seen[k] = true
				list = append(list, k)
			}
		}
		if seen["integer"] && seen["number"] {
			list = without(list, "integer")
		}
	} else {
		for _, fam := range []struct {
			name     string
			keywords []string
		}{{"object", objectKeywords}, {"array", arrayKeywords}, {"string", stringKeywords}, {"number", numberKeywords}} {
			for _, k := range fam.keywords {
				if v.Has(k) {
					list = append(list, fam.name)
					break
				}
			}
		}
		if len(list) > 0 {
			// Keywords of a type apply to values of that type only: a
			// schema that states no type admits every other value too,
			// so its Go type is a union of every JSON type, whose
			// variants carry the keywords.
			b.warn(v, "this schema states no type, so it admits values of every type, not only the %s its keywords constrain: the Go type is a union of every JSON type (state the type for a plain Go type)", strings.Join(list, " and "))
			list = []string{"object", "array", "string", "number", "boolean", "null"}
		}
	}
	nullable := false
	var out []string
	for _, t := range list {
		if t == "null" {
			nullable = true
			continue
		}
		out = append(out, t)
	}
	if contains(out, "integer") && contains(out, "number") {
		out = without(out, "integer")
	}
	return out, nullable, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func jsonType(n *Node) string {
	if n.Kind == contract.KindNumber {
		if r, ok := new(big.Rat).SetString(n.Text); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	}
	return n.Kind.String()
}

func enumValues(v *Node) []*Node {
	if e := v.Get("enum"); e != nil && e.Kind == contract.KindArray {
		return e.Items
	}
	if c := v.Get("const"); c != nil {
		return []*Node{c}
	}
	return nil
}

// enumOf decides whether a schema is an enum of strings or numbers.
func (b *builder) enumOf(v *Node, types []string) (vals []*Node, base *TypeRef, nullable, ok bool) {
	e := v.Get("enum")
	if e == nil || e.Kind != contract.KindArray || len(types) != 1 {
		return nil, nil, false, false
	}
	for _, it := range e.Items {
		if it.Kind == contract.KindNull {
			nullable = true
			continue
		}
		vals = append(vals, it)
	}
	switch types[0] {
	case "string":
		base = refString
	case "integer":
		base = refInt64
	case "number":
		base = refFloat64
	default:
		return nil, nil, false, false
	}
	kept := vals[:0:0]
	for _, it := range vals {
		k := jsonType(it)
		if k != types[0] && !(k == "integer" && types[0] == "number") {
			// values of other types can never be valid: leaving them
			// out changes no verdict
			text, _ := it.MarshalJSON()
			b.warn(it, "enum value %s is not of type %s, so no value matches it: left out of the Go constants", text, types[0])
			continue
		}
		kept = append(kept, it)
	}
	return kept, base, nullable, true
}

func (b *builder) enum(v, n *Node, name string, t *Type, base *TypeRef, vals []*Node, nullable bool) (*TypeRef, bool) {
	t = b.ensureNamed(t, n, name)
	t.Kind, t.Elem, t.Nullable = KindEnum, base, nullable
	for _, val := range vals {
		suffix := ""
		lit := val.Text
		switch val.Kind {
		case contract.KindString:
			suffix = GoName(val.Text)
			lit = strconv.Quote(val.Text)
		default:
			suffix = "Value" + strings.NewReplacer("-", "Minus", ".", "_", "+", "").Replace(val.Text)
		}
		t.Enum = append(t.Enum, &EnumValue{GoName: b.names.unique(t.Name + suffix), Value: val, Literal: lit})
	}
	return namedRef(t), nullable
}

// nilHoldsNull reports whether the Go type of a schema of the given
// types is a slice or a map, whose nil is null: an array without
// prefixItems, or an object that declares no properties and is open.
func nilHoldsNull(v *Node, types []string) bool {
	if len(types) != 1 {
		return false
	}
	switch types[0] {
	case "array":
		return v.Get("prefixItems") == nil
	case "object":
		props := v.Get("properties")
		ap := v.Get("additionalProperties")
		return (props == nil || len(props.Keys) == 0) && (ap == nil || !isFalse(ap) || v.Get("patternProperties") != nil)
	}
	return false
}

// nilIsNull reports whether a named type's Go type holds null in its own
// values: a slice, a map, a union, or an alias of raw JSON.
func nilIsNull(t *Type) bool {
	switch t.Kind {
	case KindSlice, KindMap, KindUnion:
		return true
	case KindAlias:
		return t.Elem != nil && (t.Elem.Kind == RefBuiltin && t.Elem.Name == "json.RawMessage" || t.Elem.Kind == RefNamed && t.Elem.Named != nil && nilIsNull(t.Elem.Named))
	}
	return false
}

// jsonTypeName names the JSON type of a named type's values, for a
// union variant's name: "object", "array", "string", … or "value".
func jsonTypeName(t *Type) string {
	switch t.Kind {
	case KindStruct, KindTaggedUnion:
		return "object"
	case KindTuple:
		return "array"
	case KindScalar, KindEnum:
		if t.Elem != nil && t.Elem.Kind == RefBuiltin {
			switch t.Elem.Name {
			case "string", "time.Time":
				return "string"
			case "bool":
				return "boolean"
			case "float64", "float32":
				return "number"
			}
			return "integer"
		}
	}
	return "value"
}

// multiType maps a schema with several types (["string", "number"]) to an
// untagged union with one variant per type.
func (b *builder) multiType(v, n *Node, name string, t *Type, types []string, nullable bool) (*TypeRef, bool) {
	t = b.ensureNamed(t, n, name)
	t.Kind, t.Nullable = KindUnion, nullable
	for _, ty := range types {
		restricted := &Node{Kind: contract.KindObject, Origin: v, Root: v.Root, Pointer: v.Pointer, Doc: v.Doc}
		for i, k := range v.Keys {
			if k == "type" || k == "x-go-name" {
				continue
			}
			restricted.Keys = append(restricted.Keys, k)
			restricted.Values = append(restricted.Values, v.Values[i])
		}
		restricted.Keys = append(restricted.Keys, "type")
		restricted.Values = append(restricted.Values, &Node{Kind: contract.KindString, Text: ty})
		vname := GoName(ty)
		r, _ := b.mapSchema(restricted, t.Name+vname, nil)
		t.Variants = append(t.Variants, &Variant{Name: vname, Type: r, Schema: restricted})
	}
	return namedRef(t), nullable
}

// union maps oneOf/anyOf. Branches that are null make the type nullable;
// branches that only narrow values are left to validation. One remaining
// branch is merged with the rest of the schema; several make a union.
func (b *builder) union(v, n *Node, name string, t *Type) (*TypeRef, bool, bool) {
	oneOf, anyOf := v.Get("oneOf"), v.Get("anyOf")
	// A list with a branch that only narrows values ({minimum: 2}, {},
	// {description: …}) admits values of every type through it: the list
	// says nothing of the Go type, whatever its other branches are.
	admitsAll := false
	for _, l := range []**Node{&oneOf, &anyOf} {
		if *l == nil {
			continue
		}
		for _, it := range (*l).Items {
			if constraintOnly(it) {
				admitsAll, *l = true, nil
				break
			}
		}
	}
	if admitsAll && oneOf == nil && anyOf == nil {
		return b.unionOfAll(v, n, name, t)
	}
	structural := func(list *Node) bool {
		if list == nil {
			return false
		}
		for _, it := range list.Items {
			if !constraintOnly(it) && !isNullSchema(it) && !isFalse(it) {
				return true
			}
		}
		return false
	}
	list := oneOf
	switch {
	case structural(oneOf) && structural(anyOf):
		b.warn(v, "oneOf and anyOf side by side have no single Go type: the Go type is json.RawMessage (wrap one of them in allOf, or give the member an x-go-type, for a typed one)")
		r, _ := b.finish(t, refRaw, false)
		return r, false, true
	case structural(anyOf):
		list = anyOf
	case !structural(oneOf):
		list = nil
	}
	nullable := false
	for _, l := range []*Node{oneOf, anyOf} {
		if l == nil {
			continue
		}
		for _, it := range l.Items {
			if isNullSchema(it) {
				nullable = true
			}
		}
	}
	base := &Node{Kind: contract.KindObject, Origin: v, Root: v.Root, Pointer: v.Pointer, Doc: v.Doc}
	trivial := true
	for i, k := range v.Keys {
		if k == "oneOf" || k == "anyOf" {
			continue
		}
		base.Keys = append(base.Keys, k)
		base.Values = append(base.Values, v.Values[i])
		if !inert[k] && !strings.HasPrefix(k, "x-") {
			trivial = false
		}
	}
	if list == nil {
		if !nullable {
			return nil, false, false
		}
		r, null := b.mapSchema(base, name, t)
		if t != nil {
			t.Nullable = true
		}
		_ = null
		return r, true, true
	}
	var branches []*Node
	for _, it := range list.Items {
		if isNullSchema(it) || constraintOnly(it) || isFalse(it) {
			// false admits no value: it takes no part in the Go type,
			// and validation never matches it
			continue
		}
		branches = append(branches, it)
	}
	variant := func(br *Node) *Node {
		if trivial {
			return br
		}
		return &Node{Kind: contract.KindObject, Origin: br, Root: br.Root, Pointer: br.Pointer, Doc: br.Doc,
			Keys: []string{"allOf"}, Values: []*Node{{Kind: contract.KindArray, Items: []*Node{base, br}}}}
	}
	if len(branches) == 1 && nullable && b.messages[n] {
		// A message that is one branch or null: a union of the branch
		// and null, as for {type: [T, "null"]}, unless the branch's Go
		// type has a nil of its own.
		s := variant(branches[0])
		if bv, ok := b.view(s); ok {
			if types, _, ok := b.types(bv); ok && len(types) == 1 && !nilHoldsNull(bv, types) {
				t = b.ensureNamed(t, n, name)
				t.Kind, t.Nullable = KindUnion, true
				vname := GoName(types[0])
				r, _ := b.mapSchema(s, t.Name+vname, nil)
				t.Variants = append(t.Variants, &Variant{Name: vname, Type: r, Schema: s})
				return namedRef(t), true, true
			}
		}
	}
	if len(branches) == 1 {
		r, null := b.mapSchema(variant(branches[0]), name, t)
		if t != nil {
			t.Nullable = t.Nullable || nullable
		}
		return r, null || nullable, true
	}
	t = b.ensureNamed(t, n, name)
	t.Nullable = nullable
	// A variant may admit null too ({type: [object, "null"]} beside the
	// branches, in a branch that states no type of its own): then so does
	// the union.
	schemas := make([]*Node, len(branches))
	for i, br := range branches {
		schemas[i] = variant(br)
	}
	used := nameSet{}
	if prop, tags := b.discriminator(v, schemas); prop != "" {
		refs := make([]*TypeRef, len(schemas))
		tagged := true
		for i, s := range schemas {
			r, vnull := b.mapSchema(s, t.Name+GoName(tags[i]), nil)
			refs[i], nullable = r, nullable || vnull
			if rr := r.Resolve(); rr.Kind != RefNamed || rr.Named.Kind != KindStruct {
				tagged = false
			}
		}
		t.Nullable = nullable
		if tagged {
			t.Kind, t.Discriminator, t.CaseInsensitive = KindTaggedUnion, prop, b.ci
			for i, s := range schemas {
				t.Variants = append(t.Variants, &Variant{Name: GoName(tags[i]), Type: refs[i], Tag: tags[i], Schema: s})
			}
			return namedRef(t), nullable, true
		}
		// A variant that is not a struct (a schema that states no type
		// admits values other than objects; one with several structural
		// branches of its own is a union) is not told apart by its tag
		// alone: the union is untagged, its variants named after their
		// referenced types or their tags.
		t.Kind = KindUnion
		for i, s := range schemas {
			vname := GoName(tags[i])
			if pureRef(s) && refs[i].Kind == RefNamed {
				vname = refs[i].Name
			}
			t.Variants = append(t.Variants, &Variant{Name: used.unique(vname), Type: refs[i], Schema: s})
		}
		return namedRef(t), nullable, true
	}
	t.Kind = KindUnion
	for i, s := range schemas {
		suffix := "Variant" + strconv.Itoa(i)
		if ty, _, ok := b.types(s); ok && len(ty) == 1 && !pureRef(s) {
			suffix = GoName(ty[0])
		}
		r, vnull := b.mapSchema(s, t.Name+suffix, nil)
		vname := suffix
		if pureRef(s) && r.Kind == RefNamed {
			vname = r.Name
		}
		nullable = nullable || vnull
		t.Variants = append(t.Variants, &Variant{Name: used.unique(vname), Type: r, Schema: s})
	}
	t.Nullable = nullable
	return namedRef(t), nullable, true
}

// unionOfAll maps a schema whose oneOf/anyOf admits values of every type
// through one of its branches: the Go type is that of the schema without
// them, or, when it states no type either, a union of every JSON type,
// on which validation tries the branches.
func (b *builder) unionOfAll(v, n *Node, name string, t *Type) (*TypeRef, bool, bool) {
	base := &Node{Kind: contract.KindObject, Origin: v, Root: v.Root, Pointer: v.Pointer, Doc: v.Doc}
	for i, k := range v.Keys {
		if k == "oneOf" || k == "anyOf" {
			continue
		}
		base.Keys = append(base.Keys, k)
		base.Values = append(base.Values, v.Values[i])
	}
	if base.Has("type") || enumValues(base) != nil {
		return nil, false, false
	}
	for _, fam := range [][]string{objectKeywords, arrayKeywords, stringKeywords, numberKeywords} {
		for _, k := range fam {
			if base.Has(k) {
				return nil, false, false // types says so, and warns
			}
		}
	}
	r, nullable := b.anyValue(base, n, name, t)
	return r, nullable, true
}

// anyValue maps a message whose schema admits values of every type (it
// states no type, and its keywords imply none: {format: email}, {not: …},
// true) to a union of every JSON type, so that its checks run in
// generated code on whichever value it holds. A member of that kind stays
// raw JSON.
func (b *builder) anyValue(v, n *Node, name string, t *Type) (*TypeRef, bool) {
	if v.Kind == contract.KindBool {
		v = &Node{Kind: contract.KindObject, Origin: n, Root: n.Root, Pointer: n.Pointer, Doc: n.Doc}
	}
	return b.multiType(v, n, name, t, []string{"object", "array", "string", "number", "boolean"}, true)
}

// isFalse reports whether n is the schema false.
func isFalse(n *Node) bool { return n.Kind == contract.KindBool && !n.Bool }

// discriminator finds the member whose constant value tells variants apart:
// OpenAPI's discriminator.propertyName when given, else the first property
// that every variant requires with a distinct constant string.
func (b *builder) discriminator(v *Node, variants []*Node) (string, []string) {
	var candidates []string
	if d := v.Get("discriminator"); d != nil {
		if p := d.Get("propertyName"); p != nil && p.Kind == contract.KindString {
			candidates = []string{p.Text}
		}
	}
	views := make([]*Node, len(variants))
	for i, s := range variants {
		vv, ok := b.view(s)
		if !ok || vv.Kind != contract.KindObject {
			return "", nil
		}
		views[i] = vv
	}
	if candidates == nil {
		if props := views[0].Get("properties"); props != nil {
			candidates = props.Keys
		}
	}
next:
	for _, p := range candidates {
		tags := make([]string, len(views))
		seen := map[string]bool{}
		for i, vv := range views {
			props := vv.Get("properties")
			ps := props.Get(p)
			if ps == nil || !requires(vv, p) {
				continue next
			}
			for ps.Kind == contract.KindObject && ps.Ref != nil && pureRef(ps) {
				ps = ps.Ref
			}
			if merged, ok := b.view(ps); ok {
				ps = merged
			}
			vals := enumValues(ps)
			if len(vals) != 1 || vals[0].Kind != contract.KindString || seen[vals[0].Text] {
				continue next
			}
			seen[vals[0].Text] = true
			tags[i] = vals[0].Text
		}
		return p, tags
	}
	return "", nil
}

func requires(v *Node, p string) bool {
	if r := v.Get("required"); r != nil {
		for _, it := range r.Items {
			if it.Text == p {
				return true
			}
		}
	}
	return false
}

// mapKey returns the key type of a map whose schema is v: the enum type
// its propertyNames maps to, when that is (or refers to) an enum of
// strings and nothing else, or nil for string keys. name is the map's
// type name, from which an inline enum's is made (<name>Key).
func (b *builder) mapKey(v *Node, name string) *TypeRef {
	pn := v.Get("propertyNames")
	if pn == nil || pn.Kind != contract.KindObject {
		return nil
	}
	target := pn
	for target.Kind == contract.KindObject && target.Ref != nil && pureRef(target) {
		target = target.Ref
	}
	if merged, ok := b.view(target); ok {
		target = merged
	}
	vals := enumValues(target)
	if len(vals) == 0 {
		return nil
	}
	for _, x := range vals {
		if x.Kind != contract.KindString {
			return nil
		}
	}
	r, nullable := b.mapSchema(pn, name+"Key", nil)
	if nullable || r == nil || r.Kind != RefNamed || r.Named.Kind != KindEnum {
		return nil
	}
	if base := r.Named.Elem.Resolve(); base.Kind != RefBuiltin || base.Name != "string" {
		return nil
	}
	return r
}

// KeyString spells a map's key type: string, or its enum's name (key).
func KeyString(key *TypeRef) string {
	if key == nil {
		return "string"
	}
	return GoString(key)
}

// MapKey returns the key type of map r (a map, or a named map type), nil
// for string keys.
func MapKey(r *TypeRef) *TypeRef {
	r = r.Resolve()
	switch {
	case r.Kind == RefMap:
		return r.Key
	case r.Kind == RefNamed && r.Named.Kind == KindMap:
		return r.Named.Key
	}
	return nil
}

// object maps an object schema: a struct when it declares properties, a
// map otherwise.
func (b *builder) object(v, n *Node, name string, t *Type, nullable bool) (*TypeRef, bool) {
	props := v.Get("properties")
	declared := props != nil && len(props.Keys) > 0
	typeName := name
	if t != nil {
		typeName = t.Name
	}
	extra, closed := b.extras(v, typeName)
	if !declared {
		if closed {
			// {} is the only value: an empty struct says so.
			t = b.ensureNamed(t, n, name)
			t.Kind, t.Nullable = KindStruct, nullable
			return namedRef(t), nullable
		}
		return b.finish(t, &TypeRef{Kind: RefMap, Elem: extra, Key: b.mapKey(v, typeName)}, nullable)
	}
	t = b.ensureNamed(t, n, name)
	t.Kind, t.Nullable, t.CaseInsensitive = KindStruct, nullable, b.ci
	fieldNames := nameSet{"MarshalJSON": true, "UnmarshalJSON": true, "Validate": true, "String": true}
	for i, key := range props.Keys {
		ps := props.Values[i]
		if ps.Kind == contract.KindBool && !ps.Bool {
			continue
		}
		goName := GoName(key)
		if x := ps.Get("x-go-name"); x != nil && x.Kind == contract.KindString {
			goName = x.Text
		}
		goName = fieldNames.unique(goName)
		r, fnull := b.mapSchema(ps, t.Name+goName, nil)
		req := requires(v, key)
		f := &Field{GoName: goName, JSONName: key, Type: r, Required: req, Nullable: fnull, Schema: ps, Default: defaultOf(ps), Doc: docOf(ps)}
		f.Presence = presence(r, req, fnull)
		t.Fields = append(t.Fields, f)
	}
	if !closed {
		t.Extra = &Extra{GoName: fieldNames.unique("AdditionalProperties"), Value: extra}
	}
	return namedRef(t), nullable
}

// extras maps what an object allows besides its declared properties. It
// reports closed when nothing else is allowed.
func (b *builder) extras(v *Node, typeName string) (*TypeRef, bool) {
	addl := v.Get("additionalProperties")
	if addl == nil {
		addl = v.Get("unevaluatedProperties")
		// Members that if/then/else, dependentSchemas or a union's
		// branches declare are evaluated too: unevaluatedProperties does
		// not close the Go type to them, and jsonschema/v5, which checks
		// it, decides.
		for _, k := range []string{"if", "then", "else", "dependentSchemas", "anyOf", "oneOf"} {
			if addl != nil && v.Has(k) {
				addl = nil
			}
		}
	}
	pats := v.Get("patternProperties")
	var schemas []*Node
	if pats != nil {
		for _, s := range pats.Values {
			// false admits no member's value: no Go value holds one, and
			// validation refuses a member it applies to
			if !isFalse(s) {
				schemas = append(schemas, s)
			}
		}
	}
	closed := addl != nil && addl.Kind == contract.KindBool && !addl.Bool
	if closed && len(schemas) == 0 {
		return nil, true
	}
	if !closed {
		if addl == nil {
			// Undeclared members are allowed: true, placed at the object
			// for messages that name it.
			addl = &Node{Kind: contract.KindBool, Bool: true, Origin: v, Root: v.Root, Pointer: v.Pointer, Doc: v.Doc}
		}
		schemas = append(schemas, addl)
	}
	var result *TypeRef
	var first *Node
	for _, s := range schemas {
		r, null := b.mapSchema(s, typeName+"Value", nil)
		r = elemRef(r, null)
		if result == nil {
			result, first = r, s
			continue
		}
		if GoString(r) != GoString(result) {
			b.warn(s, "patternProperties/additionalProperties map to different Go types (%s at %s, %s here), and a Go map has one value type: undeclared members are held as json.RawMessage (make the schemas agree, or give them the same x-go-type, for a typed map)", GoString(result), first.Source().Pointer, GoString(r))
			return refRaw, false
		}
	}
	return result, false
}

// array maps an array schema: a tuple with prefixItems, a slice otherwise.
func (b *builder) array(v, n *Node, name string, t *Type, nullable bool) (*TypeRef, bool) {
	items := v.Get("items")
	if prefix := v.Get("prefixItems"); prefix != nil {
		t = b.ensureNamed(t, n, name)
		t.Kind, t.Nullable = KindTuple, nullable
		minItems := 0
		if m := v.Get("minItems"); m != nil {
			minItems, _ = strconv.Atoi(m.Text)
		}
		for i, ps := range prefix.Items {
			if ps.Kind == contract.KindBool && !ps.Bool {
				break
			}
			goName := "Item" + strconv.Itoa(i)
			if x := ps.Get("x-go-name"); x != nil && x.Kind == contract.KindString {
				goName = x.Text
			}
			r, fnull := b.mapSchema(ps, t.Name+goName, nil)
			req := i < minItems
			f := &Field{GoName: goName, Index: i, Type: r, Required: req, Nullable: fnull, Schema: ps, Doc: docOf(ps)}
			f.Presence = presence(r, req, fnull)
			if f.Presence == PresenceOmitZero {
				// a nil slice in a tuple must still say whether the element is there
				f.Presence = PresencePointer
			}
			t.Fields = append(t.Fields, f)
		}
		switch {
		case items == nil || items.Kind == contract.KindBool && items.Bool:
			t.Rest = refRaw
		case items.Kind == contract.KindBool:
			t.Rest = nil
		default:
			r, null := b.mapSchema(items, t.Name+"Rest", nil)
			t.Rest = elemRef(r, null)
		}
		return namedRef(t), nullable
	}
	elem := refRaw
	if items != nil && !(items.Kind == contract.KindBool) {
		r, null := b.mapSchema(items, name+"Item", nil)
		elem = elemRef(r, null)
	}
	return b.finish(t, &TypeRef{Kind: RefSlice, Elem: elem}, nullable)
}

func defaultOf(n *Node) *Node {
	for i := 0; i < 64 && n != nil; i++ {
		if d := n.Get("default"); d != nil {
			return d
		}
		if !pureRef(n) {
			return nil
		}
		n = n.Ref
	}
	return nil
}

// docOf joins a schema's title and description.
func docOf(n *Node) string {
	var parts []string
	for _, k := range []string{"title", "description"} {
		if v := n.Get(k); v != nil && v.Kind == contract.KindString && strings.TrimSpace(v.Text) != "" {
			parts = append(parts, strings.TrimSpace(v.Text))
		}
	}
	return strings.Join(parts, "\n\n")
}

// GoString spells a type reference in Go, with package qualifiers
// ("[]*NodeCondition", "map[string]json.RawMessage", "v1.Pod").
func GoString(r *TypeRef) string {
	switch r.Kind {
	case RefSlice:
		return "[]" + GoString(r.Elem)
	case RefMap:
		return "map[" + KeyString(r.Key) + "]" + GoString(r.Elem)
	case RefPointer:
		return "*" + GoString(r.Elem)
	case RefExternal:
		if r.Import == "" {
			return r.Name
		}
		return ImportName(r.Import) + "." + r.Name
	}
	return r.Name
}

// ImportName is the identifier generated code uses for an import path: its
// last element, made an identifier ("gopkg.in/yaml.v3" → yamlv3).
func ImportName(imp string) string {
	base := path.Base(imp)
	var sb strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			sb.WriteRune(r)
		}
	}
	s := sb.String()
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "pkg" + s
	}
	return s
}

// breakValueCycles turns struct fields that would contain their own type by
// value into pointers, so recursive schemas have a finite Go size.
func (b *builder) breakValueCycles() {
	state := map[*Type]int{}
	var visit func(t *Type)
	visit = func(t *Type) {
		state[t] = 1
		for _, f := range t.Fields {
			r := f.Type.Resolve()
			if r.Kind != RefNamed || r.Named == nil {
				continue
			}
			u := r.Named
			if u.Kind != KindStruct && u.Kind != KindTuple {
				continue
			}
			if f.Presence != PresenceValue && f.Presence != PresenceNullable {
				continue
			}
			switch state[u] {
			case 1:
				if f.Presence == PresenceValue {
					f.Presence = PresencePointer
				} else {
					f.Type = &TypeRef{Kind: RefPointer, Elem: f.Type}
				}
			case 0:
				visit(u)
			}
		}
		state[t] = 2
	}
	for _, t := range b.pkg.Types {
		if state[t] == 0 && (t.Kind == KindStruct || t.Kind == KindTuple) {
			visit(t)
		}
	}
}
