package contract

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Bundling turns a message's normalised schema into one self-contained
// JSON Schema 2020-12 document, the form [handshake.Contract.Schemas]
// carries and the fingerprint covers:
//
//   - the root is the message's schema, with "$schema" set to 2020-12 first;
//   - every schema it references outside its own tree is copied into the
//     root's "$defs" under a deterministic name (see defName), and each
//     "$ref" is rewritten to a JSON pointer fragment within the document:
//     "#/$defs/<name>" or "#/<pointer within the root>";
//   - generator hints ("x-go-…" members) are left out, because they do not
//     change the wire; every other member is kept in source order;
//   - with case-insensitive keys on, the root carries
//     "x-lockstep-case-insensitive": true so that the runtime sees it.
type bundler struct {
	root  *Node            // the message's normalised root
	defs  map[*Node]string // hoisted target → name under $defs
	names map[string]bool  // names taken under $defs
	out   []*Node          // hoisted copies, in naming order
	keys  []string         // their names
	at    map[*Node]string // normalised schema → its JSON pointer in the bundle
}

// Bundle builds the self-contained document of a normalised message schema.
func bundle(root *Node, caseInsensitive bool) (*Node, map[*Node]string) {
	b := &bundler{root: root, defs: map[*Node]string{}, names: map[string]bool{}, at: map[*Node]string{}}
	if d := root.Get("$defs"); d != nil {
		for _, k := range d.Keys {
			b.names[k] = true
		}
	}
	doc := b.copy(root, "")
	for i := 0; i < len(b.out); i++ {
		// copying a hoisted schema may hoist more
		b.out[i] = b.copy(b.out[i], "/$defs/"+escapePointerToken(b.keys[i]))
	}
	if doc.Kind != KindObject {
		return doc, b.at
	}
	head := &Node{Kind: KindObject, Keys: []string{"$schema"}, Values: []*Node{{Kind: KindString, Text: Draft2020URL}}}
	if caseInsensitive {
		head.Keys = append(head.Keys, CaseInsensitiveKey)
		head.Values = append(head.Values, &Node{Kind: KindBool, Bool: true})
	}
	for i, k := range doc.Keys {
		if k == "$schema" || k == CaseInsensitiveKey {
			continue
		}
		head.Keys = append(head.Keys, k)
		head.Values = append(head.Values, doc.Values[i])
	}
	doc = head
	if len(b.out) > 0 {
		defs := doc.Get("$defs")
		if defs == nil {
			defs = &Node{Kind: KindObject}
			doc.Keys = append(doc.Keys, "$defs")
			doc.Values = append(doc.Values, defs)
		}
		defs.Keys = append(defs.Keys, b.keys...)
		defs.Values = append(defs.Values, b.out...)
	}
	return doc, b.at
}

// within reports whether target lies in the message's own tree.
func (b *bundler) within(target *Node) bool {
	return target.Root == b.root.Root &&
		(target.Pointer == b.root.Pointer || strings.HasPrefix(target.Pointer, b.root.Pointer+"/"))
}

// refText rewrites a reference to target as a fragment of the bundle.
func (b *bundler) refText(target *Node) string {
	target = chaseRefs(target)
	if b.within(target) {
		return "#" + escapeFragment(target.Pointer[len(b.root.Pointer):])
	}
	name, ok := b.defs[target]
	if !ok {
		name = b.freeName(defName(target))
		b.defs[target] = name
		b.keys = append(b.keys, name)
		b.out = append(b.out, target) // copied by the caller's loop
	}
	return "#/$defs/" + escapeFragment(escapePointerToken(name))
}

func (b *bundler) freeName(base string) string {
	name := base
	for i := 2; b.names[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	b.names[name] = true
	return name
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// defName names a hoisted schema after where it came from: its name under
// $defs/definitions, its message name, or its file's base name.
func defName(target *Node) string {
	src := target.Source()
	tokens := strings.Split(src.Pointer, "/")
	switch {
	case len(tokens) >= 3 && (tokens[len(tokens)-2] == "$defs" || tokens[len(tokens)-2] == "definitions"):
		return sanitiseName(unescapePointerToken(tokens[len(tokens)-1]))
	case src.Doc != nil && src.Doc.contract && len(tokens) == 3 && tokens[1] == "schemas":
		return sanitiseName(unescapePointerToken(tokens[2]))
	case src.Pointer == "" && src.Doc != nil:
		base := path.Base(src.Doc.URL)
		for _, ext := range []string{".json", ".yaml", ".yml", ".schema"} {
			base = strings.TrimSuffix(base, ext)
		}
		return sanitiseName(base)
	}
	return sanitiseName(strings.Join(tokens[1:], "."))
}

func sanitiseName(s string) string {
	s = nonName.ReplaceAllString(s, "_")
	if s == "" {
		return "schema"
	}
	return s
}

// escapeFragment percent-encodes a JSON pointer for use as a URI fragment.
func escapeFragment(p string) string {
	var sb strings.Builder
	for _, c := range []byte(p) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0 {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}

// copy copies a normalised schema into the bundle at JSON pointer at,
// rewriting references and leaving out generator hints. The copy keeps
// Origin so that errors found in the bundle are reported at their source.
func (b *bundler) copy(n *Node, at string) *Node {
	if _, seen := b.at[n]; !seen {
		b.at[n] = at
	}
	c := &Node{Kind: n.Kind, Bool: n.Bool, Text: n.Text, Origin: n, Doc: n.Doc}
	if n.Kind != KindObject {
		return c
	}
	var ecmaPats *Node
	for i, key := range n.Keys {
		v := n.Values[i]
		if strings.HasPrefix(key, "x-go-") {
			continue
		}
		if key == "pattern" && v.Kind == KindString && ecmaOnly(v.Text) {
			c.Keys = append(c.Keys, ECMAPatternKey)
			c.Values = append(c.Values, v)
			continue
		}
		var cv *Node
		switch {
		case key == "$ref" && n.Ref != nil:
			cv = &Node{Kind: KindString, Text: b.refText(n.Ref), Origin: v}
		case !isSchemaKeyword(key):
			cv = v
		default:
			switch subschemaKeyword(key, Draft2020) {
			case shapeSchema, shapeItems:
				cv = b.copy(v, child(at, key))
			case shapeSchemas:
				cv = &Node{Kind: KindArray, Origin: v, Items: make([]*Node, len(v.Items))}
				for j, it := range v.Items {
					cv.Items[j] = b.copy(it, child(child(at, key), strconv.Itoa(j)))
				}
			case shapeSchemaMap:
				cv = &Node{Kind: KindObject, Origin: v}
				for j, mv := range v.Values {
					if key == "patternProperties" && ecmaOnly(v.Keys[j]) {
						if ecmaPats == nil {
							ecmaPats = &Node{Kind: KindObject, Origin: v}
						}
						ecmaPats.Keys = append(ecmaPats.Keys, v.Keys[j])
						ecmaPats.Values = append(ecmaPats.Values, b.copy(mv, child(child(at, ECMAPatternPropertiesKey), v.Keys[j])))
						continue
					}
					cv.Keys = append(cv.Keys, v.Keys[j])
					cv.Values = append(cv.Values, b.copy(mv, child(child(at, key), v.Keys[j])))
				}
			default:
				cv = v
			}
		}
		c.Keys = append(c.Keys, key)
		c.Values = append(c.Values, cv)
	}
	if ecmaPats != nil {
		c.Keys = append(c.Keys, ECMAPatternPropertiesKey)
		c.Values = append(c.Values, ecmaPats)
	}
	return c
}

// ECMAPatternKey and ECMAPatternPropertiesKey carry, in a bundle, the
// patterns (of "pattern", and the keys of "patternProperties") that only
// an ECMA-262 engine runs: lookahead, lookbehind, backreferences. The
// runtime's jsonschema/v5 compiles patterns with Go's regexp (RE2), and
// would refuse the bundle; under these names it ignores them, and the
// message's generated Validate, which the generator requires of such a
// message, enforces them (jsonwire.NewECMAPattern).
const (
	ECMAPatternKey           = "x-lockstep-ecma-pattern"
	ECMAPatternPropertiesKey = "x-lockstep-ecma-patternProperties"
)

// ecmaOnly reports whether a pattern compiles only with the ECMA-262
// engine, not with Go's regexp.
func ecmaOnly(p string) bool {
	re, err := jsonwire.CompilePattern(p)
	return err == nil && re.ECMA()
}

func isSchemaKeyword(key string) bool {
	_, ok := keywords[key]
	return ok
}
