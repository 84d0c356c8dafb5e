package gogen

import (
	"regexp"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Coverage of positions: every member, element and variant decodes every
// JSON type its schema admits there, or the type is left to jsonschema/v5.

// positions checks that every member, element and variant of the type
// decodes every value its schema admits there: otherwise the decoder
// would refuse a valid message.
func (vc *vctx) positions() {
	t := vc.t
	switch t.Kind {
	case gomodel.KindStruct:
		for _, f := range t.Fields {
			vc.position(memberSchemas(t.Schema, f.JSONName), fieldHolds(f), f.Type, f.Schema)
		}
		if t.Extra != nil {
			for _, s := range extraSchemas(t.Schema) {
				vc.position([]*node{s}, holds(t.Extra.Value), t.Extra.Value, s)
			}
		}
	case gomodel.KindMap:
		for _, s := range extraSchemas(t.Schema) {
			vc.position([]*node{s}, holds(t.Elem), t.Elem, s)
		}
	case gomodel.KindSlice:
		vc.position(itemSchemas(t.Schema), holds(t.Elem), t.Elem, t.Schema)
	case gomodel.KindTuple:
		for i, f := range t.Fields {
			vc.position(prefixSchemas(t.Schema, i), fieldHolds(f), f.Type, f.Schema)
		}
		if t.Rest != nil {
			vc.position(itemSchemas(t.Schema), holds(t.Rest), t.Rest, t.Schema)
		}
	case gomodel.KindUnion:
		held := kNull
		for _, v := range t.Variants {
			if v.Type.Resolve().Kind == gomodel.RefExternal {
				vc.uncovered(v.Schema, "variant %s is an x-go-type", v.Name)
			}
			held |= holds(v.Type)
		}
		if extra := admits(t.Schema, 0) &^ held; extra != 0 {
			vc.uncovered(t.Schema, "the schema admits %s, which no alternative of %s holds", extra, t.Name)
		}
	}
}

// position checks one place: the intersection of the schemas that apply
// there must admit nothing the Go type cannot hold; unnamed slices and maps
// are checked element by element.
func (vc *vctx) position(schemas []*node, held kinds, r *gomodel.TypeRef, at *node) {
	admitted := kAll
	for _, s := range schemas {
		admitted &= admits(s, 0)
	}
	if extra := admitted &^ held; extra != 0 {
		vc.uncovered(at, "the schema admits %s, which %s cannot hold", extra, gomodel.GoString(r))
		return
	}
	rr := r.Resolve()
	switch rr.Kind {
	case gomodel.RefPointer:
		vc.position(schemas, holds(rr.Elem)|kNull, rr.Elem, at)
	case gomodel.RefSlice:
		var items []*node
		for _, s := range schemas {
			items = append(items, itemSchemas(s)...)
		}
		vc.position(items, holds(rr.Elem), rr.Elem, at)
	case gomodel.RefMap:
		for _, s := range schemas {
			for _, e := range extraSchemas(s) {
				vc.position([]*node{e}, holds(rr.Elem), rr.Elem, at)
			}
		}
	case gomodel.RefExternal:
		vc.uncovered(at, "x-go-type %s decodes with its own rules, which need not match the schema", gomodel.GoString(rr))
	}
}

// inPlace returns s and the schemas it applies to the same value
// unconditionally: through $ref and allOf.
func inPlace(s *node) []*node {
	var out []*node
	seen := map[*node]bool{}
	var walk func(n *node)
	walk = func(n *node) {
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
func memberSchemas(s *node, name string) []*node {
	var out []*node
	for _, part := range inPlace(s) {
		props, pats, addl := part.Get("properties"), part.Get("patternProperties"), part.Get("additionalProperties")
		if ps := props.Get(name); ps != nil {
			out = append(out, ps)
			continue
		}
		matched := false
		if pats != nil {
			for i, pat := range pats.Keys {
				if re, err := regexp.Compile(pat); err == nil && re.MatchString(name) {
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
func extraSchemas(s *node) []*node {
	var out []*node
	for _, part := range inPlace(s) {
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
func itemSchemas(s *node) []*node {
	var out []*node
	for _, part := range inPlace(s) {
		if it := part.Get("items"); it != nil {
			out = append(out, it)
		}
	}
	return out
}

// prefixSchemas returns the schemas that apply to tuple element i.
func prefixSchemas(s *node, i int) []*node {
	var out []*node
	for _, part := range inPlace(s) {
		if pre := part.Get("prefixItems"); pre != nil && i < len(pre.Items) {
			out = append(out, pre.Items[i])
		} else if it := part.Get("items"); it != nil {
			out = append(out, it)
		}
	}
	return out
}
