package gomodel

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Validation coverage: which types get generated checks, decided here so
// that the renderer only renders what the model decided.
//
// A type is covered when every keyword its schema applies can be checked
// on its Go value and every type its checks call is covered in turn. Two
// walks decide it. One checks that every position of the type (member,
// element, variant) and every message root decodes every JSON type its
// schema admits there, or the decoder would refuse valid messages. The
// other ([decideKeywords]) walks the schema over the Go value keyword by
// keyword, as the renderer will, and decides each keyword: checked, on
// which value, or not and why, and which types' checks are called. A
// covered message gets an exported Validate, which the runtime calls
// instead of validating the JSON with jsonschema/v5; anything not covered
// leaves the message to jsonschema/v5, whole.

// Validation is the model's decision about a type's generated checks.
type Validation struct {
	// Covered reports that the type and every type its checks call are
	// checked by generated code.
	Covered bool `json:"covered"`
	// Emit reports that the type gets a validateJSON method: it is
	// covered and reachable from a covered message.
	Emit bool `json:"emit,omitempty"`
	// Messages are the messages whose root the type is; when covered, it
	// gets an exported Validate for them.
	Messages []string `json:"messages,omitempty"`
	// Reasons say why the type itself is not covered, each with the
	// schema's file, line and pointer.
	Reasons []string `json:"reasons,omitempty"`
	// Calls are the types whose checks this type's checks call, by name.
	Calls []string `json:"calls,omitempty"`
	// Keywords are the decisions about each keyword of the type's schema
	// on the Go value it applies to, in the order the checks evaluate them.
	Keywords []KeywordCheck `json:"keywords,omitempty"`

	calls []*Type
	index map[checkKey]int
}

// DecideValidation decides, for every type but aliases, whether it gets
// generated checks (t.Validation) and which keywords they check.
func (p *Package) DecideValidation() {
	for _, t := range p.Types {
		if t.Kind == KindAlias {
			continue
		}
		a := &analysis{t: t}
		a.positions()
		w := decideKeywords(t)
		t.Validation = &Validation{Reasons: append(w.reasons, a.reasons...), calls: w.calls,
			Keywords: w.keywords, index: w.index}
		for _, called := range w.calls {
			t.Validation.Calls = append(t.Validation.Calls, called.Name)
		}
		sort.Strings(t.Validation.Calls)
		t.Validation.Covered = len(t.Validation.Reasons) == 0
	}
	for changed := true; changed; {
		changed = false
		for _, t := range p.Types {
			v := t.Validation
			if v == nil || !v.Covered {
				continue
			}
			for _, c := range v.calls {
				if c.Validation == nil || !c.Validation.Covered {
					v.Covered = false
					changed = true
					break
				}
			}
		}
	}
	for _, m := range p.Contract.Messages {
		t := RootType(p.Messages[m.Name])
		if t == nil || t.Validation == nil {
			continue
		}
		if r := rootReason(m, t); r != "" {
			t.Validation.Reasons = append(t.Validation.Reasons, r)
			t.Validation.Covered = false
		}
		t.Validation.Messages = append(t.Validation.Messages, m.Name)
	}
	var mark func(t *Type)
	mark = func(t *Type) {
		if t.Validation.Emit {
			return
		}
		t.Validation.Emit = true
		for _, c := range t.Validation.calls {
			mark(c)
		}
	}
	for _, t := range p.Types {
		if v := t.Validation; v != nil && len(v.Messages) > 0 && v.Covered {
			mark(t)
		}
	}
}

// Coverage says, for each message, whether it gets a generated Validate
// (nil) and, when not, why: the keywords or types its schema uses that
// generated checks do not cover. It reads what [Package.DecideValidation]
// decided.
func (p *Package) Coverage() map[string][]string {
	out := map[string][]string{}
	for _, m := range p.Contract.Messages {
		t := RootType(p.Messages[m.Name])
		if t != nil && t.Validation != nil && t.Validation.Covered {
			out[m.Name] = nil
			continue
		}
		out[m.Name] = WhyNot(t)
	}
	return out
}

// WhyNot lists why t is not covered: its own reasons, then those of the
// types its checks call.
func WhyNot(t *Type) []string {
	if t == nil {
		return []string{"the message is raw JSON or an x-go-type"}
	}
	seen := map[*Type]bool{}
	var out []string
	var walk func(t *Type)
	walk = func(t *Type) {
		if seen[t] || t.Validation == nil {
			return
		}
		seen[t] = true
		out = append(out, t.Validation.Reasons...)
		calls := append([]*Type(nil), t.Validation.calls...)
		sort.Slice(calls, func(i, j int) bool { return calls[i].Name < calls[j].Name })
		for _, c := range calls {
			walk(c)
		}
	}
	walk(t)
	return out
}

// RootType is the named type of this package a message decodes into, or
// nil when the message is an alias of a builtin or external type.
func RootType(t *Type) *Type {
	for i := 0; t != nil && t.Kind == KindAlias && i < 64; i++ {
		r := t.Elem.Resolve()
		if r.Kind != RefNamed {
			return nil
		}
		t = r.Named
	}
	return t
}

// rootReason checks that a message's root type decodes every value its
// schema admits.
func rootReason(m *contract.Message, t *Type) string {
	admitted := Admits(m.Schema, 0)
	held := Holds(&TypeRef{Kind: RefNamed, Named: t, Name: t.Name})
	if extra := admitted &^ held; extra != 0 {
		return fmt.Sprintf("%s: the schema admits %s, which %s cannot hold", Where(m.Schema), extra, t.Name)
	}
	return ""
}

// Where names a schema for a reason: its file, line and column, and its
// pointer in that file.
func Where(n *contract.Node) string {
	if w := n.Where(); w != "" {
		if s := n.Source(); s != nil && s.Pointer != "" {
			return w + " (" + s.Pointer + ")"
		}
		return w
	}
	return "#" + n.Pointer
}

// analysis is the model's own look at one type's positions.
type analysis struct {
	t       *Type
	reasons []string
}

func (a *analysis) uncovered(s *contract.Node, format string, args ...any) {
	a.reasons = append(a.reasons, Where(s)+": "+fmt.Sprintf(format, args...))
}

// JSONTypes is a set of JSON types; number means a number that is not an
// integer.
type JSONTypes uint8

const (
	JSONNull JSONTypes = 1 << iota
	JSONBoolean
	JSONInteger
	JSONNumber
	JSONString
	JSONArray
	JSONObject
	JSONAll = JSONNull | JSONBoolean | JSONInteger | JSONNumber | JSONString | JSONArray | JSONObject
)

func (k JSONTypes) String() string {
	var parts []string
	for i, n := range []string{"null", "boolean", "integer", "number", "string", "array", "object"} {
		if k&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ", ")
}

func JSONTypeNamed(t string) JSONTypes {
	switch t {
	case "null":
		return JSONNull
	case "boolean":
		return JSONBoolean
	case "integer":
		return JSONInteger
	case "number":
		return JSONInteger | JSONNumber
	case "string":
		return JSONString
	case "array":
		return JSONArray
	case "object":
		return JSONObject
	}
	return 0
}

func jsonTypeOf(n *contract.Node) JSONTypes {
	switch n.Kind {
	case contract.KindNull:
		return JSONNull
	case contract.KindBool:
		return JSONBoolean
	case contract.KindNumber:
		if r, ok := new(big.Rat).SetString(n.Text); ok && r.IsInt() {
			return JSONInteger
		}
		return JSONNumber
	case contract.KindString:
		return JSONString
	case contract.KindArray:
		return JSONArray
	}
	return JSONObject
}

// Admits over-approximates the JSON types a schema accepts.
func Admits(s *contract.Node, depth int) JSONTypes {
	if s == nil || depth > 64 {
		return JSONAll
	}
	if s.Kind == contract.KindBool {
		if s.Bool {
			return JSONAll
		}
		return 0
	}
	k := JSONAll
	if t := s.Get("type"); t != nil {
		var allowed JSONTypes
		if t.Kind == contract.KindString {
			allowed = JSONTypeNamed(t.Text)
		}
		for _, it := range t.Items {
			allowed |= JSONTypeNamed(it.Text)
		}
		k &= allowed
	}
	if e := s.Get("enum"); e != nil {
		var allowed JSONTypes
		for _, it := range e.Items {
			allowed |= jsonTypeOf(it)
		}
		k &= allowed
	}
	if c := s.Get("const"); c != nil {
		k &= jsonTypeOf(c)
	}
	if s.Ref != nil {
		k &= Admits(s.Ref, depth+1)
	}
	if all := s.Get("allOf"); all != nil {
		for _, it := range all.Items {
			k &= Admits(it, depth+1)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if list := s.Get(key); list != nil {
			var any JSONTypes
			for _, it := range list.Items {
				any |= Admits(it, depth+1)
			}
			k &= any
		}
	}
	return k
}

// Holds returns the JSON types a Go type's decoder accepts.
func Holds(r *TypeRef) JSONTypes {
	r = r.Resolve()
	switch r.Kind {
	case RefPointer:
		return Holds(r.Elem) | JSONNull
	case RefSlice:
		return JSONArray | JSONNull
	case RefMap:
		return JSONObject | JSONNull
	case RefExternal:
		return 0
	case RefBuiltin:
		switch r.Name {
		case "string", "time.Time":
			return JSONString
		case "int64", "int32", "uint32", "uint64":
			return JSONInteger
		case "float64", "float32":
			return JSONInteger | JSONNumber
		case "bool":
			return JSONBoolean
		case "json.RawMessage":
			return JSONAll
		}
		return 0
	}
	t := r.Named
	switch t.Kind {
	case KindStruct, KindTaggedUnion:
		return JSONObject
	case KindMap:
		return JSONObject | JSONNull
	case KindSlice:
		return JSONArray | JSONNull
	case KindTuple:
		return JSONArray
	case KindUnion:
		return JSONAll
	case KindEnum, KindScalar:
		return Holds(t.Elem)
	}
	return 0
}

// FieldHolds returns the JSON types a struct member or tuple element
// accepts, with the null its presence can hold.
func FieldHolds(f *Field) JSONTypes {
	h := Holds(f.Type)
	switch f.Presence {
	case PresencePointer:
		h &^= JSONNull
		if f.Required && f.Nullable {
			h |= JSONNull
		}
	case PresenceOmitZero:
		if !f.Type.IsRaw() {
			h &^= JSONNull
		}
	case PresenceNullable:
		h |= JSONNull
	}
	return h
}

// positions checks that every member, element and variant of the type
// decodes every value its schema admits there: otherwise the decoder
// would refuse a valid message.
func (a *analysis) positions() {
	t := a.t
	switch t.Kind {
	case KindStruct:
		for _, f := range t.Fields {
			a.position(memberSchemas(t.Schema, f.JSONName), FieldHolds(f), f.Type, f.Schema)
		}
		if t.Extra != nil {
			for _, s := range extraSchemas(t.Schema) {
				a.position([]*contract.Node{s}, Holds(t.Extra.Value), t.Extra.Value, s)
			}
		}
	case KindMap:
		for _, s := range extraSchemas(t.Schema) {
			a.position([]*contract.Node{s}, Holds(t.Elem), t.Elem, s)
		}
	case KindSlice:
		a.position(itemSchemas(t.Schema), Holds(t.Elem), t.Elem, t.Schema)
	case KindTuple:
		for i, f := range t.Fields {
			a.position(prefixSchemas(t.Schema, i), FieldHolds(f), f.Type, f.Schema)
		}
		if t.Rest != nil {
			a.position(itemSchemas(t.Schema), Holds(t.Rest), t.Rest, t.Schema)
		}
	case KindUnion:
		held := JSONNull
		for _, v := range t.Variants {
			if v.Type.Resolve().Kind == RefExternal {
				a.uncovered(v.Schema, "variant %s is an x-go-type", v.Name)
			}
			held |= Holds(v.Type)
		}
		if extra := Admits(t.Schema, 0) &^ held; extra != 0 {
			a.uncovered(t.Schema, "the schema admits %s, which no alternative of %s holds", extra, t.Name)
		}
	}
}

// position checks one place: the intersection of the schemas that apply
// there must admit nothing the Go type cannot hold; unnamed slices and maps
// are checked element by element.
func (a *analysis) position(schemas []*contract.Node, held JSONTypes, r *TypeRef, at *contract.Node) {
	admitted := JSONAll
	for _, s := range schemas {
		admitted &= Admits(s, 0)
	}
	if extra := admitted &^ held; extra != 0 {
		a.uncovered(at, "the schema admits %s, which %s cannot hold", extra, GoString(r))
		return
	}
	rr := r.Resolve()
	switch rr.Kind {
	case RefPointer:
		a.position(schemas, Holds(rr.Elem)|JSONNull, rr.Elem, at)
	case RefSlice:
		var items []*contract.Node
		for _, s := range schemas {
			items = append(items, itemSchemas(s)...)
		}
		a.position(items, Holds(rr.Elem), rr.Elem, at)
	case RefMap:
		for _, s := range schemas {
			for _, e := range extraSchemas(s) {
				a.position([]*contract.Node{e}, Holds(rr.Elem), rr.Elem, at)
			}
		}
	case RefExternal:
		a.uncovered(at, "x-go-type %s decodes with its own rules, which need not match the schema", GoString(rr))
	}
}

// InPlace returns s and the schemas it applies to the same value
// unconditionally: through $ref and allOf.
func InPlace(s *contract.Node) []*contract.Node {
	var out []*contract.Node
	seen := map[*contract.Node]bool{}
	var walk func(n *contract.Node)
	walk = func(n *contract.Node) {
		if n == nil || seen[n] || n.Kind != contract.KindObject {
			return
		}
		seen[n] = true
		out = append(out, n)
		walk(n.Ref)
		if all := n.Get("allOf"); all != nil {
			for _, it := range all.Items {
				walk(it)
			}
		}
	}
	walk(s)
	return out
}

// memberSchemas returns the schemas that apply to member name of an object
// valid for s: its properties entries, else the matching patternProperties
// and additionalProperties.
func memberSchemas(s *contract.Node, name string) []*contract.Node {
	var out []*contract.Node
	for _, part := range InPlace(s) {
		props, pats, addl := part.Get("properties"), part.Get("patternProperties"), part.Get("additionalProperties")
		if ps := props.Get(name); ps != nil {
			out = append(out, ps)
			continue
		}
		matched := false
		if pats != nil {
			for i, pat := range pats.Keys {
				if re, err := jsonwire.CompilePattern(pat); err == nil && re.MatchString(name) {
					out = append(out, pats.Values[i])
					matched = true
				}
			}
		}
		if !matched && addl != nil {
			out = append(out, addl)
		}
	}
	return out
}

// extraSchemas returns the schemas that may apply to undeclared members.
func extraSchemas(s *contract.Node) []*contract.Node {
	var out []*contract.Node
	for _, part := range InPlace(s) {
		if pats := part.Get("patternProperties"); pats != nil {
			out = append(out, pats.Values...)
		}
		if addl := part.Get("additionalProperties"); addl != nil {
			out = append(out, addl)
		}
	}
	return out
}

// itemSchemas returns the "items" schemas that apply to array elements.
func itemSchemas(s *contract.Node) []*contract.Node {
	var out []*contract.Node
	for _, part := range InPlace(s) {
		if it := part.Get("items"); it != nil {
			out = append(out, it)
		}
	}
	return out
}

// prefixSchemas returns the schemas that apply to tuple element i.
func prefixSchemas(s *contract.Node, i int) []*contract.Node {
	var out []*contract.Node
	for _, part := range InPlace(s) {
		if pre := part.Get("prefixItems"); pre != nil && i < len(pre.Items) {
			out = append(out, pre.Items[i])
		} else if it := part.Get("items"); it != nil {
			out = append(out, it)
		}
	}
	return out
}
