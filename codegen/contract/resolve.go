package contract

import (
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Document is one file a contract is made of: the contract file itself or a
// schema file it references.
type Document struct {
	// URL is the file's absolute file:// URL, the base of its references.
	URL string
	// Path is the file's path as shown in errors: relative to the contract's
	// folder where possible.
	Path string
	// Root is the parsed file.
	Root *Node
	// contract marks the contract file, whose schemas are under /schemas.
	contract bool
}

// schemaInfo is what resolution knows of a schema node in a source file.
type schemaInfo struct {
	base     string // base URI for its references (no fragment)
	draft    Draft
	resource *Node // the schema resource it belongs to: a file root or a contract message
}

// resolver loads schema files, indexes their identifiers and resolves
// references, as jsonschema/v5 does.
type resolver struct {
	readFile func(path string) ([]byte, error)
	dir      string // the contract's folder, for display paths
	docs     map[string]*Document
	ids      map[string]*Node // resource URI (no fragment) → resource root
	anchors  map[string]*Node // URI#anchor → schema
	info     map[*Node]*schemaInfo
	errs     *errorList
	// locations are the contract's schemaLocations, longest prefix first.
	locations []location
}

// location maps absolute URIs under prefix to files under dir.
type location struct {
	prefix, dir string
}

// localFile returns the file that holds the schema at URI u (no fragment):
// a file:// URL's own path, or the copy schemaLocations names.
func (r *resolver) localFile(u string) (string, bool) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", false
	}
	if pu.Scheme == "file" {
		return filepath.FromSlash(pu.Path), true
	}
	for _, l := range r.locations {
		if rest, ok := strings.CutPrefix(u, l.prefix); ok {
			rel := path.Clean("/" + rest)
			return filepath.Join(l.dir, filepath.FromSlash(rel)), true
		}
	}
	return "", false
}

func fileURL(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

func (r *resolver) displayPath(abs string) string {
	if rel, err := filepath.Rel(r.dir, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return abs
}

// load reads and parses a schema file by URL, once.
func (r *resolver) load(u string, from *Node) (*Document, *Error) {
	if d, ok := r.docs[u]; ok {
		return d, nil
	}
	abs, ok := r.localFile(u)
	if !ok {
		return nil, errorAt(from, "reference %s is not a file beside the contract: remote schemas are not fetched; copy the schema next to the contract and refer to it by a relative path, or map its URI to a folder of copies with the contract's schemaLocations", u)
	}
	display := r.displayPath(abs)
	data, err := r.readFile(abs)
	if err != nil {
		return nil, errorAt(from, "cannot read referenced schema file %s: %v", display, err)
	}
	var root *Node
	ext := strings.ToLower(path.Ext(abs))
	if ext == ".yaml" || ext == ".yml" {
		root, err = parseYAML(data)
	} else {
		root, err = parseJSON(data)
	}
	if err != nil {
		e := &Error{File: display, Message: err.Error()}
		if pe, ok := err.(*PosError); ok {
			e.Line, e.Col, e.Message = pe.Line, pe.Col, pe.Msg
		}
		return nil, e
	}
	d := &Document{URL: u, Path: display, Root: root}
	setPointers(root, d, "")
	r.docs[u] = d
	if root.Kind != KindObject && root.Kind != KindBool {
		return nil, errorAt(root, "a schema file must hold a JSON object or a boolean, not %s", root.Kind)
	}
	draft := Draft2020
	if s := root.Get("$schema"); s != nil {
		var e *Error
		if draft, e = declaredDraft(s); e != nil {
			return nil, e
		}
	}
	r.index(root, u, draft, root, 0)
	return d, nil
}

// declaredDraft reads a "$schema" member.
func declaredDraft(s *Node) (Draft, *Error) {
	if s.Kind != KindString {
		return 0, errorAt(s, "$schema must be a string")
	}
	d, ok := draftOf(s.Text)
	if !ok {
		return 0, errorAt(s, "$schema %q is not a draft jsonschema/v5 knows (drafts 4, 6, 7, 2019-09, 2020-12)", s.Text)
	}
	return d, nil
}

// index records base URIs, identifiers and anchors of a schema and its
// subschemas.
func (r *resolver) index(n *Node, base string, draft Draft, resource *Node, depth int) {
	if _, done := r.info[n]; done || depth > maxDepth {
		return
	}
	if n.Kind != KindObject {
		r.info[n] = &schemaInfo{base: base, draft: draft, resource: resource}
		return
	}
	idKey := "$id"
	if draft == Draft4 {
		idKey = "id"
	}
	// Before 2019-09 every member beside "$ref" is ignored, its
	// identifier too: it does not change the base the "$ref" resolves
	// against.
	if id := n.Get(idKey); id != nil && id.Kind == KindString && !(draft < Draft2019 && n.Has("$ref")) {
		abs, err := resolveURI(base, id.Text)
		if err != nil {
			r.errs.add(errorAt(id, "%s %q is not a URI reference: %v", idKey, id.Text, err))
		} else if doc, frag := splitFragment(abs); frag != "" && strings.HasPrefix(id.Text, "#") && draft < Draft2019 {
			r.anchors[doc+"#"+frag] = n
		} else {
			base = doc
			if _, seen := r.ids[base]; !seen {
				r.ids[base] = n
			}
		}
	}
	r.info[n] = &schemaInfo{base: base, draft: draft, resource: resource}
	for _, key := range []string{"$anchor", "$dynamicAnchor"} {
		if a := n.Get(key); a != nil && a.Kind == KindString && keywords[key].in(draft) {
			r.anchors[base+"#"+a.Text] = n
		}
	}
	for i, key := range n.Keys {
		v := n.Values[i]
		switch subschemaKeyword(key, draft) {
		case shapeSchema:
			r.index(v, base, draft, resource, depth+1)
		case shapeSchemas:
			for _, it := range v.Items {
				r.index(it, base, draft, resource, depth+1)
			}
		case shapeItems:
			if v.Kind == KindArray {
				for _, it := range v.Items {
					r.index(it, base, draft, resource, depth+1)
				}
			} else {
				r.index(v, base, draft, resource, depth+1)
			}
		case shapeSchemaMap, shapeDeps:
			for _, mv := range v.Values {
				if mv.Kind == KindObject || mv.Kind == KindBool {
					r.index(mv, base, draft, resource, depth+1)
				}
			}
		}
	}
}

func resolveURI(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(u).String(), nil
}

// splitFragment splits a URI at '#', returning the fragment unescaped.
func splitFragment(u string) (string, string) {
	i := strings.IndexByte(u, '#')
	if i < 0 {
		return u, ""
	}
	frag, err := url.PathUnescape(u[i+1:])
	if err != nil {
		frag = u[i+1:]
	}
	return u[:i], frag
}

// resolveRef finds the schema a "$ref" of node n points to.
func (r *resolver) resolveRef(n *Node, ref *Node) (*Node, *Error) {
	if ref.Kind != KindString {
		return nil, errorAt(ref, "$ref must be a string")
	}
	info := r.info[n]
	if info == nil {
		return nil, errorAt(ref, "internal: unindexed schema")
	}
	target, e := r.lookupRef(info.base, ref.Text, ref)
	if e != nil && !strings.Contains(ref.Text, ":") && info.base != n.Doc.URL {
		// A file whose $id names a remote location still refers to its
		// neighbours by relative path: try beside the file itself.
		if t, e2 := r.lookupRef(n.Doc.URL, ref.Text, ref); e2 == nil {
			return t, nil
		}
	}
	return target, e
}

func (r *resolver) lookupRef(base, refText string, ref *Node) (*Node, *Error) {
	abs, err := resolveURI(base, refText)
	if err != nil {
		return nil, errorAt(ref, "$ref %q is not a URI reference: %v", refText, err)
	}
	docURL, frag := splitFragment(abs)
	root, ok := r.ids[docURL]
	if !ok {
		d, e := r.load(docURL, ref)
		if e != nil {
			return nil, e
		}
		root = d.Root
		if id, ok := r.ids[docURL]; ok {
			root = id
		}
	}
	var target *Node
	switch {
	case frag == "":
		target = root
	case strings.HasPrefix(frag, "/"):
		t, err := root.Lookup(frag)
		if err != nil {
			if root.Doc != nil && root.Doc.contract {
				return nil, errorAt(ref, "$ref %q: %v (in the contract file # is the whole contract: refer to a message as #/schemas/<Name>, or to its definitions as #/schemas/<Name>/$defs/<Def>)", refText, err)
			}
			return nil, errorAt(ref, "$ref %q: %v", refText, err)
		}
		target = t
	default:
		t, ok := r.anchors[docURL+"#"+frag]
		if !ok {
			return nil, errorAt(ref, "$ref %q: no schema has anchor %q", refText, frag)
		}
		target = t
	}
	if target.Kind != KindObject && target.Kind != KindBool {
		return nil, errorAt(ref, "$ref %q points to a %s, not a schema", refText, target.Kind)
	}
	if _, ok := r.info[target]; !ok {
		// A schema in a place no keyword reaches (e.g. an OpenAPI
		// components section): index it with its document's settings.
		d := r.info[target.Doc.Root]
		draft, resource := Draft2020, target
		if d != nil {
			draft = d.draft
		}
		if target.Doc.contract {
			return nil, errorAt(ref, "$ref %q points into the contract file outside its schemas", refText)
		}
		r.index(target, docURL, draft, resource, 0)
	}
	return target, nil
}
