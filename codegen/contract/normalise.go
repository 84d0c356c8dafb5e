package contract

import (
	"strconv"
	"strings"
)

// Normalisation rewrites every schema, whatever its draft, into the one form
// the generator and the bundles use: draft 2020-12, with each "$ref" resolved
// to its target node. It keeps the meaning jsonschema/v5 gives the source:
//
//   - "$schema", "$id"/"id", "$anchor", "$dynamicAnchor", "$vocabulary" go
//     (references are resolved, so they are no longer needed);
//   - before 2019-09, members beside "$ref" are ignored, so they go, except
//     "x-" extensions;
//   - an array "items" becomes "prefixItems", and "additionalItems" beside it
//     becomes "items"; "additionalItems" beside a schema "items" goes;
//   - "dependencies" splits into "dependentRequired" and "dependentSchemas";
//   - a boolean "exclusiveMinimum"/"exclusiveMaximum" (draft 4) becomes the
//     number form;
//   - a 2020-12 keyword in a file of a draft that did not know it is only an
//     annotation there, so it goes.
//
// "$recursiveRef" and "$dynamicRef" are refused: they are for meta-schemas
// and extensible vocabularies, not for messages on a wire.

// normaliser holds the normalised copies of source schemas.
type normaliser struct {
	r       *resolver
	copies  map[*Node]*Node // source → normalised
	roots   []*Node         // every normalised root, in creation order
	pending []*Node         // normalised nodes whose Ref is not resolved yet
	errs    *errorList
}

// schema returns the normalised copy of a source schema, normalising the
// schema resource it belongs to first so that one copy serves every
// reference into it.
func (z *normaliser) schema(src *Node) *Node {
	if c, ok := z.copies[src]; ok {
		return c
	}
	if info := z.r.info[src]; info != nil && info.resource != src {
		z.schema(info.resource)
		if c, ok := z.copies[src]; ok {
			return c
		}
	}
	root := &Node{}
	z.copies[src] = root
	z.roots = append(z.roots, root)
	z.fill(root, src, root, "", 0)
	z.resolvePending()
	return root
}

// resolvePending resolves references until no normalised node waits for one.
func (z *normaliser) resolvePending() {
	for len(z.pending) > 0 {
		n := z.pending[0]
		z.pending = z.pending[1:]
		target, e := z.r.resolveRef(n.Origin, n.Origin.Get("$ref"))
		if e != nil {
			z.errs.add(e)
			continue
		}
		n.Ref = z.schema(target)
	}
}

func (z *normaliser) draftOf(src *Node) Draft {
	if info := z.r.info[src]; info != nil {
		return info.draft
	}
	return Draft2020
}

// fill makes dst the normalised copy of the source schema src.
func (z *normaliser) fill(dst, src, root *Node, ptr string, depth int) {
	dst.Origin, dst.Root, dst.Pointer, dst.Doc = src, root, ptr, src.Doc
	dst.Line, dst.Col = src.Line, src.Col
	if depth > maxDepth {
		z.errs.add(errorAt(src, "schema nested deeper than %d", maxDepth))
		return
	}
	switch src.Kind {
	case KindBool:
		dst.Kind, dst.Bool = KindBool, src.Bool
		return
	case KindObject:
	default:
		z.errs.add(errorAt(src, "a schema must be an object or a boolean, not %s", src.Kind))
		dst.Kind = KindBool
		dst.Bool = true
		return
	}
	dst.Kind = KindObject
	draft := z.draftOf(src)
	if _, ok := z.r.info[src]; !ok {
		z.r.index(src, src.Doc.URL, draft, src, 0)
	}
	ref := src.Get("$ref")
	add := func(key string, v *Node) {
		dst.Keys = append(dst.Keys, key)
		dst.Values = append(dst.Values, v)
	}
	sub := func(key string, s *Node, d int) *Node {
		c := &Node{}
		z.copies[s] = c
		z.fill(c, s, root, ptr+"/"+key, d)
		return c
	}
	var depRequired, depSchemas *Node
	items := src.Get("items")
	for i, key := range src.Keys {
		v := src.Values[i]
		if ref != nil && draft < Draft2019 && key != "$ref" && !strings.HasPrefix(key, "x-") {
			continue
		}
		kw, known := keywords[key]
		if !known {
			add(key, copyValue(v, dst, ptr+"/"+escapePointerToken(key)))
			continue
		}
		if !kw.in(draft) && key != "definitions" && key != "$defs" {
			continue
		}
		switch key {
		case "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary":
			continue
		case "$recursiveRef", "$dynamicRef":
			z.errs.add(errorAt(v, "%s is not supported in contracts: use $ref", key))
			continue
		case "$ref":
			if v.Kind != KindString {
				z.errs.add(errorAt(v, "$ref must be a string"))
				continue
			}
			add(key, copyValue(v, dst, ptr+"/$ref"))
			z.pending = append(z.pending, dst)
			continue
		case "exclusiveMinimum", "exclusiveMaximum":
			if v.Kind == KindBool {
				var bound *Node
				if key == "exclusiveMinimum" {
					bound = src.Get("minimum")
				} else {
					bound = src.Get("maximum")
				}
				if v.Bool && bound != nil {
					add(key, copyValue(bound, dst, ptr+"/"+key))
				}
				continue
			}
		case "minimum", "maximum":
			if ex := src.Get("exclusive" + strings.ToUpper(key[:1]) + key[1:]); ex != nil && ex.Kind == KindBool && ex.Bool {
				continue
			}
		case "additionalItems":
			if items != nil && items.Kind == KindArray && draft < Draft2020 {
				add("items", sub("items", v, depth+1))
			}
			continue
		case "items":
			if v.Kind == KindArray {
				arr := &Node{Kind: KindArray, Origin: v, Root: root, Pointer: ptr + "/prefixItems", Doc: v.Doc, Line: v.Line, Col: v.Col}
				for j, it := range v.Items {
					c := &Node{}
					z.copies[it] = c
					z.fill(c, it, root, arr.Pointer+"/"+strconv.Itoa(j), depth+1)
					arr.Items = append(arr.Items, c)
				}
				add("prefixItems", arr)
				continue
			}
		case "dependencies", "dependentRequired", "dependentSchemas":
			if v.Kind != KindObject {
				z.errs.add(errorAt(v, "%s must be an object", key))
				continue
			}
			for j, name := range v.Keys {
				dv := v.Values[j]
				if dv.Kind == KindArray && key != "dependentSchemas" {
					if depRequired == nil {
						depRequired = &Node{Kind: KindObject, Origin: v, Root: root, Pointer: ptr + "/dependentRequired", Doc: v.Doc}
						add("dependentRequired", depRequired)
					}
					depRequired.Keys = append(depRequired.Keys, name)
					depRequired.Values = append(depRequired.Values, copyValue(dv, depRequired, depRequired.Pointer+"/"+escapePointerToken(name)))
				} else if key != "dependentRequired" {
					if depSchemas == nil {
						depSchemas = &Node{Kind: KindObject, Origin: v, Root: root, Pointer: ptr + "/dependentSchemas", Doc: v.Doc}
						add("dependentSchemas", depSchemas)
					}
					c := &Node{}
					z.copies[dv] = c
					z.fill(c, dv, root, depSchemas.Pointer+"/"+escapePointerToken(name), depth+1)
					depSchemas.Keys = append(depSchemas.Keys, name)
					depSchemas.Values = append(depSchemas.Values, c)
				} else {
					z.errs.add(errorAt(dv, "dependentRequired values are arrays of property names"))
				}
			}
			continue
		}
		switch subschemaKeyword(key, Draft2020) {
		case shapeSchema, shapeItems:
			add(key, sub(escapePointerToken(key), v, depth+1))
		case shapeSchemas:
			if v.Kind != KindArray {
				z.errs.add(errorAt(v, "%s must be an array of schemas", key))
				continue
			}
			arr := &Node{Kind: KindArray, Origin: v, Root: root, Pointer: ptr + "/" + key, Doc: v.Doc, Line: v.Line, Col: v.Col}
			for j, it := range v.Items {
				c := &Node{}
				z.copies[it] = c
				z.fill(c, it, root, arr.Pointer+"/"+strconv.Itoa(j), depth+1)
				arr.Items = append(arr.Items, c)
			}
			add(key, arr)
		case shapeSchemaMap:
			if v.Kind != KindObject {
				z.errs.add(errorAt(v, "%s must be an object of schemas", key))
				continue
			}
			m := &Node{Kind: KindObject, Origin: v, Root: root, Pointer: ptr + "/" + escapePointerToken(key), Doc: v.Doc, Line: v.Line, Col: v.Col}
			for j, name := range v.Keys {
				c := &Node{}
				z.copies[v.Values[j]] = c
				z.fill(c, v.Values[j], root, m.Pointer+"/"+escapePointerToken(name), depth+1)
				m.Keys = append(m.Keys, name)
				m.Values = append(m.Values, c)
			}
			add(key, m)
		default:
			add(key, copyValue(v, dst, ptr+"/"+escapePointerToken(key)))
		}
	}
}

// copyValue copies a non-schema JSON value into a normalised tree.
func copyValue(v *Node, parent *Node, ptr string) *Node {
	c := &Node{Kind: v.Kind, Bool: v.Bool, Text: v.Text, Origin: v, Root: parent.Root, Pointer: ptr, Doc: v.Doc, Line: v.Line, Col: v.Col}
	for i, k := range v.Keys {
		c.Keys = append(c.Keys, k)
		c.Values = append(c.Values, copyValue(v.Values[i], c, ptr+"/"+escapePointerToken(k)))
	}
	if v.Kind == KindArray {
		c.Items = make([]*Node, len(v.Items))
		for i, it := range v.Items {
			c.Items[i] = copyValue(it, c, ptr+"/"+strconv.Itoa(i))
		}
	}
	return c
}
