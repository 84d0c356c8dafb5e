package gomodel

import (
	"crypto/sha256"
	"fmt"

	"github.com/lockstep-dev/lockstep/codegen/contract"
)

// One Go type per distinct inline schema. Schemas written out in full at
// every place they are used (Kubernetes' stand-alone schemas inline each
// definition wherever it is referenced: ObjectMeta, Probe, ResourceRequirements
// …) would otherwise give one type per place, with the same declarations,
// decoder, encoder and checks each time. The rule (docs/codegen.md, Naming):
//
//   - Two schemas are the same when they are the same JSON, member for
//     member in the same order, with every "$ref" resolving to the same
//     schema, and are mapped with the same member-name case rule. Every
//     keyword counts: validation keywords, x-go-* extensions, defaults,
//     and titles and descriptions too, since a type's doc comment and its
//     fields' are written from them.
//   - An inline object schema the same as a schema some "$ref" names (with
//     declared properties, nothing else that could change its Go shape) is
//     that definition's type.
//   - Otherwise the first of them in the builder's walk (messages in
//     contract order, then depth first, members in schema order) names the
//     type as it would without sharing; the others use it.
//
// Only schemas that get a named type of their own are shared: an inline
// string, slice or map stays as it is.

// sharedKey identifies a schema for sharing: its content and the case rule
// it is mapped under.
type sharedKey struct {
	digest [sha256.Size]byte
	ci     bool
}

// sharedType is the type of the first schema with a key, and whether that
// schema also admits null.
type sharedType struct {
	t        *Type
	nullable bool
}

// digest returns a SHA-256 of n's content: its kind and value, an object's
// members in order and an array's items, each by its own digest, and for a
// "$ref" the identity of the schema it resolves to. Digests are
// memoised per node.
func (b *builder) digest(n *Node) [sha256.Size]byte {
	if d, ok := b.digests[n]; ok {
		return d
	}
	h := sha256.New()
	str := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	fmt.Fprintf(h, "%d", n.Kind)
	switch n.Kind {
	case contract.KindBool:
		fmt.Fprintf(h, "%t", n.Bool)
	case contract.KindNumber, contract.KindString:
		str(n.Text)
	case contract.KindArray:
		fmt.Fprintf(h, "[%d", len(n.Items))
		for _, it := range n.Items {
			d := b.digest(it)
			h.Write(d[:])
		}
	case contract.KindObject:
		fmt.Fprintf(h, "{%d", len(n.Keys))
		for i, k := range n.Keys {
			str(k)
			d := b.digest(n.Values[i])
			h.Write(d[:])
		}
		if n.Ref != nil {
			fmt.Fprintf(h, "$ref %p", n.Ref)
		}
	}
	var d [sha256.Size]byte
	copy(d[:], h.Sum(nil))
	b.digests[n] = d
	return d
}

// definitions records, for every schema a "$ref" reachable from roots
// resolves to that maps to a struct ([definesStruct]), its digest, so that
// the same schema written inline is the definition's type. The first such
// definition in the walk (depth first, members in order) wins.
func (b *builder) definitions(roots []*Node) {
	seen := map[*Node]bool{}
	var walk func(n *Node)
	walk = func(n *Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		if n.Ref != nil {
			if definesStruct(n.Ref) {
				d := b.digest(n.Ref)
				if _, ok := b.defs[d]; !ok {
					b.defs[d] = n.Ref
				}
			}
			walk(n.Ref)
		}
		for _, v := range n.Values {
			walk(v)
		}
		for _, it := range n.Items {
			walk(it)
		}
	}
	for _, r := range roots {
		walk(r)
	}
}

// definesStruct reports whether schema n certainly maps to a struct of its
// own: an object schema with declared properties and nothing that could
// make it another shape (a reference, a combinator, an enum, x-go-type).
func definesStruct(n *Node) bool {
	if n.Kind != contract.KindObject || n.Ref != nil {
		return false
	}
	for _, k := range []string{"x-go-type", "allOf", "oneOf", "anyOf", "enum", "const"} {
		if n.Has(k) {
			return false
		}
	}
	ty, props := n.Get("type"), n.Get("properties")
	return ty != nil && ty.Kind == contract.KindString && ty.Text == "object" && props != nil && props.Kind == contract.KindObject && len(props.Keys) > 0
}

// mapShared maps an inline schema n, sharing the type of an identical
// schema mapped before, or of an identical definition, when there is one.
func (b *builder) mapShared(n *Node, name string) (*TypeRef, bool) {
	key := sharedKey{digest: b.digest(n), ci: b.ci}
	if s, ok := b.shared[key]; ok {
		b.share(s.t, n)
		return namedRef(s.t), s.nullable
	}
	if def := b.defs[key.digest]; def != nil && def != n {
		if t := b.named[def]; t == nil || !b.mapping[t] {
			t := b.namedFor(def)
			b.share(t, n)
			return namedRef(t), t.Nullable
		}
	}
	r, nullable := b.mapNode(n, name, nil)
	if r.Kind == RefNamed && r.Named != nil && b.named[n] == r.Named {
		b.shared[key] = sharedType{t: r.Named, nullable: nullable}
	}
	return r, nullable
}

// share makes t the type of schema n too.
func (b *builder) share(t *Type, n *Node) {
	t.Shared = append(t.Shared, n)
	t.SharedAt = append(t.SharedAt, n.Where())
	b.named[n] = t
}
