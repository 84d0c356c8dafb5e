// Package contract reads a lockstep contract file and the JSON Schema files
// it references, checks them, and produces the validated model the
// generator works from together with the wire model ([handshake.Contract])
// the fingerprint covers.
//
// Schemas may be written in drafts 4, 6, 7, 2019-09 or 2020-12 (2020-12 when
// a file declares no "$schema"), inline in the contract or in files beside
// it. Every schema is meta-validated against its draft and every bundled
// message compiled with santhosh-tekuri/jsonschema/v5, so a contract that
// loads is one the runtime accepts. Problems are reported as [Error] values
// naming the file, line and JSON pointer.
package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-version"

	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// CaseInsensitiveKey is the contract-level or message-level extension that
// makes decoding match member names regardless of case, for peers that send
// Go field names without JSON tags (the Kubernetes scheduler extender does).
const CaseInsensitiveKey = "x-lockstep-case-insensitive"

// FileNames are the names a contract file may have in its folder, in the
// order they are looked for.
var FileNames = []string{"contract.yaml", "contract.yml", "contract.json"}

// Contract is a loaded, validated contract file.
type Contract struct {
	// File is the contract file's path, and Dir its folder.
	File, Dir string
	// Name, Version, Server and Client are the contract's identity and roles.
	Name, Version, Server, Client string
	// Description is the contract's optional prose, used in doc comments.
	Description string
	// ForkFrom is the folder of the version this one forks from, relative to
	// Dir as written in the file, or "".
	ForkFrom string
	// CaseInsensitive is the contract-wide default of [CaseInsensitiveKey].
	CaseInsensitive bool
	// Methods, sorted by name.
	Methods []Method
	// Topics, sorted by name.
	Topics []Topic
	// Messages, sorted by name: every entry of the contract's schemas.
	Messages []*Message
}

// Method is one RPC of a contract.
type Method struct {
	// Name is the method's name, also its Go method name.
	Name string
	// Request and Response name entries of [Contract.Messages].
	Request, Response string
	// Idempotent and Batch are the method's flags.
	Idempotent, Batch bool
	// MaxItems bounds a batch method's items per call (0: the server's
	// bound); part of the fingerprint only when set.
	MaxItems int
	// Path overrides the HTTP path for pinned external peers.
	Path string
	// Description is optional prose for doc comments.
	Description string
}

// Topic is a watchable collection declared by a contract.
type Topic struct {
	// Name is the topic's name.
	Name string
	// Object names the message each object conforms to; Key is its key field.
	Object, Key string
	// Writer is the side that writes it; LostWriter its lost-writer policy.
	Writer     handshake.Role
	LostWriter handshake.LostWriterPolicy
	// Selectors are the object's members a watcher may select on, in the
	// order the file lists them.
	Selectors []Selector
	// Description is optional prose for doc comments.
	Description string
}

// Selector is one field a topic's watchers may select on: a top-level
// member of the topic's object whose value is a string, an integer or a
// boolean, so that a watch request's text value names it exactly.
type Selector struct {
	// Field is the member's JSON name.
	Field string
	// Kind is the member's JSON type: KindString, KindNumber (an integer)
	// or KindBool.
	Kind Kind
}

// SelectorFields returns the fields of a topic's selectors.
func (t Topic) SelectorFields() []string {
	if len(t.Selectors) == 0 {
		return nil
	}
	out := make([]string, len(t.Selectors))
	for i, s := range t.Selectors {
		out[i] = s.Field
	}
	return out
}

// Message is one entry of the contract's schemas.
type Message struct {
	// Name is the message's name, also its Go type name.
	Name string
	// Schema is the message's normalised schema (draft 2020-12, references
	// resolved through [Node.Ref]). When the entry is only a reference, it is
	// the referenced schema.
	Schema *Node
	// Bundle is the self-contained JSON Schema document of the message, as
	// carried in [handshake.Contract.Schemas].
	Bundle json.RawMessage
	// CaseInsensitive reports whether decoding ignores the case of member
	// names ([CaseInsensitiveKey] on the message or the contract).
	CaseInsensitive bool
	// pointers locates normalised schemas in Bundle.
	pointers map[*Node]string
}

// Locate returns the JSON pointer in [Message.Bundle] of a normalised
// schema the message uses, so that a subschema (a named type's) can be
// compared between versions of the bundle.
func (m *Message) Locate(schema *Node) (string, bool) {
	p, ok := m.pointers[schema]
	return p, ok
}

// Message returns a message by name, or nil.
func (c *Contract) Message(name string) *Message {
	for _, m := range c.Messages {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Handshake returns the wire model of the contract: the value a contract
// described by hand builds, and the one the fingerprint covers.
func (c *Contract) Handshake() handshake.Contract {
	h := handshake.Contract{
		Name: c.Name, Version: c.Version, Server: c.Server, Client: c.Client,
		Methods: map[string]handshake.Method{}, Topics: map[string]handshake.Topic{},
		Schemas: map[string]json.RawMessage{},
	}
	for _, m := range c.Methods {
		h.Methods[m.Name] = handshake.Method{Request: m.Request, Response: m.Response, Idempotent: m.Idempotent, Batch: m.Batch, Path: m.Path, MaxItems: m.MaxItems}
	}
	for _, t := range c.Topics {
		h.Topics[t.Name] = handshake.Topic{Object: t.Object, Key: t.Key, Writer: t.Writer, LostWriter: t.LostWriter, Selectors: t.SelectorFields()}
	}
	for _, m := range c.Messages {
		h.Schemas[m.Name] = append(json.RawMessage(nil), m.Bundle...)
	}
	return h
}

// Find returns the path of the contract file in dir.
func Find(dir string) (string, error) {
	for _, name := range FileNames {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no contract file in %s: expected one of %s", dir, strings.Join(FileNames, ", "))
}

// Load finds and loads the contract file in dir.
func Load(dir string) (*Contract, error) {
	p, err := Find(dir)
	if err != nil {
		return nil, err
	}
	return LoadFile(p)
}

// LoadFile loads a contract file and the schema files it references.
func LoadFile(path string) (*Contract, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	return Parse(abs, data, os.ReadFile)
}

// Parse loads a contract from its text. path names the file (its extension
// chooses YAML or JSON; its folder is the base of relative references);
// readFile reads referenced schema files by absolute path.
func Parse(path string, data []byte, readFile func(path string) ([]byte, error)) (*Contract, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	errs := &errorList{}
	r := &resolver{
		readFile: readFile, dir: dir, docs: map[string]*Document{},
		ids: map[string]*Node{}, anchors: map[string]*Node{}, info: map[*Node]*schemaInfo{}, errs: errs,
	}
	display := r.displayPath(abs)
	var root *Node
	if strings.EqualFold(filepath.Ext(abs), ".json") {
		root, err = parseJSON(data)
	} else {
		root, err = parseYAML(data)
	}
	if err != nil {
		e := &Error{File: display, Message: err.Error()}
		var pe *PosError
		if errors.As(err, &pe) {
			e.Line, e.Col, e.Message = pe.Line, pe.Col, pe.Msg
		} else {
			e.Message = strings.TrimPrefix(err.Error(), "yaml: ")
		}
		return nil, e
	}
	doc := &Document{URL: fileURL(abs), Path: display, Root: root, contract: true}
	setPointers(root, doc, "")
	r.docs[doc.URL] = doc
	c := &Contract{File: abs, Dir: dir}
	p := &parser{c: c, errs: errs, r: r}
	p.top(root)
	if len(*errs) > 0 {
		return nil, errs.err()
	}
	return c, nil
}

type parser struct {
	c    *Contract
	errs *errorList
	r    *resolver
}

var (
	// identPattern is the rule for method, topic and message names: each
	// becomes an exported Go name (a client method, a Topic<Name> type, a
	// message type), so it starts with an upper-case ASCII letter.
	identPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	namePattern  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// exportedHint suggests the exported form of a name that only lacks an
// upper-case first letter.
func exportedHint(name string) string {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return ""
	}
	fixed := strings.ToUpper(name[:1]) + name[1:]
	if !identPattern.MatchString(fixed) {
		return ""
	}
	return fmt.Sprintf(": write %q", fixed)
}

// str reads a required or optional string member.
func (p *parser) str(obj *Node, key string, required bool) string {
	v := obj.Get(key)
	if v == nil {
		if required {
			p.errs.add(errorAt(obj, "%s is required", key))
		}
		return ""
	}
	if v.Kind != KindString {
		p.errs.add(errorAt(v, "%s must be a string, not %s", key, v.Kind))
		return ""
	}
	return v.Text
}

// maxItems reads a method's optional maxItems: a positive integer.
func (p *parser) maxItems(obj *Node) int {
	v := obj.Get("maxItems")
	if v == nil {
		return 0
	}
	n, err := strconv.Atoi(v.Text)
	if v.Kind != KindNumber || err != nil || n <= 0 {
		p.errs.add(errorAt(v, "maxItems must be a positive integer, not %s", v.Text))
		return 0
	}
	return n
}

func (p *parser) boolean(obj *Node, key string) bool {
	v := obj.Get(key)
	if v == nil {
		return false
	}
	if v.Kind != KindBool {
		p.errs.add(errorAt(v, "%s must be true or false, not %s", key, v.Kind))
		return false
	}
	return v.Bool
}

// only reports members of obj that are not in allowed (extensions "x-…"
// are always allowed).
func (p *parser) only(obj *Node, what string, allowed ...string) {
	for i, k := range obj.Keys {
		if strings.HasPrefix(k, "x-") {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			p.errs.add(errorAt(obj.Values[i], "unknown %s member %q (known: %s)", what, k, strings.Join(allowed, ", ")))
		}
	}
}

func (p *parser) top(root *Node) {
	c := p.c
	if root.Kind != KindObject {
		p.errs.add(errorAt(root, "a contract file must hold an object, not %s", root.Kind))
		return
	}
	p.only(root, "contract", "contract", "version", "server", "client", "description", "forkFrom", "methods", "topics", "schemas", SchemaLocationsKey)
	c.Name = p.str(root, "contract", true)
	if c.Name != "" && !namePattern.MatchString(c.Name) {
		p.errs.add(errorAt(root.Get("contract"), "contract name %q must be lower-case letters, digits and dashes, starting with a letter", c.Name))
	}
	if v := root.Get("version"); v != nil && v.Kind != KindString {
		p.errs.add(errorAt(v, "version must be a string: write version: \"%s\" with quotes, since a YAML or JSON number loses its meaning (2.10 would read as 2.1)", v.Text))
	} else {
		c.Version = p.str(root, "version", true)
		if c.Version != "" {
			if _, err := version.NewSemver(c.Version); err != nil {
				p.errs.add(errorAt(v, "version %q is not a semantic version such as \"2.0.0\"", c.Version))
			}
		}
	}
	c.Server = p.str(root, "server", true)
	c.Client = p.str(root, "client", true)
	for _, k := range []string{"server", "client"} {
		if v := root.Get(k); v != nil && v.Kind == KindString && !namePattern.MatchString(v.Text) {
			p.errs.add(errorAt(v, "component name %q must be lower-case letters, digits and dashes, starting with a letter", v.Text))
		}
	}
	if c.Server != "" && c.Server == c.Client {
		p.errs.add(errorAt(root.Get("client"), "server and client are both %q: a contract joins two different components", c.Server))
	}
	c.Description = p.str(root, "description", false)
	c.ForkFrom = p.str(root, "forkFrom", false)
	c.CaseInsensitive = p.boolean(root, CaseInsensitiveKey)

	p.schemaLocations(root.Get(SchemaLocationsKey))
	schemas := root.Get("schemas")
	if schemas == nil {
		p.errs.add(errorAt(root, "schemas is required: the messages of the contract"))
	} else if schemas.Kind != KindObject {
		p.errs.add(errorAt(schemas, "schemas must be an object of message name to schema"))
		schemas = nil
	}
	if schemas != nil {
		p.messages(schemas)
	}
	if m := root.Get("methods"); m != nil {
		p.methods(m)
	}
	if t := root.Get("topics"); t != nil {
		p.topics(t)
	}
	if len(*p.errs) == 0 {
		p.check()
	}
}

// SchemaLocationsKey is the contract member that maps the absolute URIs of
// schemas a contract refers to but does not fetch (e.g.
// "https://example.com/schemas/") to folders of local copies, relative to
// the contract's folder or absolute:
//
//	schemaLocations:
//	  "https://example.com/schemas/": third_party/example-schemas
//
// A "$ref" (or "$id"-relative reference) whose URI starts with a key is read
// from the file at the rest of the URI under the folder, keeping its URI as
// its base, exactly as a validator that fetched it would see it. The
// bundle carries the copy, so the runtime never fetches either.
const SchemaLocationsKey = "schemaLocations"

// schemaLocations reads the contract's [SchemaLocationsKey].
func (p *parser) schemaLocations(m *Node) {
	if m == nil {
		return
	}
	if m.Kind != KindObject {
		p.errs.add(errorAt(m, "%s must be an object of URI prefix to folder", SchemaLocationsKey))
		return
	}
	for i, prefix := range m.Keys {
		v := m.Values[i]
		u, err := url.Parse(prefix)
		switch {
		case err != nil || !u.IsAbs() || u.Fragment != "" || !strings.HasSuffix(prefix, "/"):
			p.errs.add(errorAt(v, "%s key %q must be an absolute URI ending in / (a folder of schemas)", SchemaLocationsKey, prefix))
		case v.Kind != KindString || v.Text == "":
			p.errs.add(errorAt(v, "%s[%q] must be a folder, relative to the contract's or absolute", SchemaLocationsKey, prefix))
		default:
			dir := filepath.FromSlash(v.Text)
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(p.r.dir, dir)
			}
			p.r.locations = append(p.r.locations, location{prefix: prefix, dir: dir})
		}
	}
	// The longest prefix wins.
	sort.SliceStable(p.r.locations, func(i, j int) bool { return len(p.r.locations[i].prefix) > len(p.r.locations[j].prefix) })
}

func (p *parser) methods(m *Node) {
	if m.Kind != KindObject {
		p.errs.add(errorAt(m, "methods must be an object of method name to declaration"))
		return
	}
	for i, name := range m.Keys {
		d := m.Values[i]
		if !identPattern.MatchString(name) {
			p.errs.add(errorAt(d, "method name %q must be an exported Go name: ASCII letters and digits, starting with an upper-case letter (it names the generated client's and server's Go method)%s", name, exportedHint(name)))
		}
		if d.Kind != KindObject {
			p.errs.add(errorAt(d, "method %s must be an object with request and response", name))
			continue
		}
		p.only(d, "method", "request", "response", "idempotent", "batch", "path", "maxItems", "description")
		meth := Method{
			Name: name, Request: p.str(d, "request", true), Response: p.str(d, "response", true),
			Idempotent: p.boolean(d, "idempotent"), Batch: p.boolean(d, "batch"),
			Path: p.str(d, "path", false), Description: p.str(d, "description", false),
			MaxItems: p.maxItems(d),
		}
		if meth.MaxItems != 0 && !meth.Batch {
			p.errs.add(errorAt(d.Get("maxItems"), "method %s: maxItems applies to batch methods only", name))
		}
		if meth.Path != "" && !strings.HasPrefix(meth.Path, "/") {
			p.errs.add(errorAt(d.Get("path"), "path %q must start with /", meth.Path))
		}
		for _, k := range []string{"request", "response"} {
			if v := d.Get(k); v != nil && v.Kind == KindString && p.c.Message(v.Text) == nil {
				p.errs.add(errorAt(v, "method %s: %s %q is not an entry of schemas", name, k, v.Text))
			}
		}
		p.c.Methods = append(p.c.Methods, meth)
	}
	sort.Slice(p.c.Methods, func(i, j int) bool { return p.c.Methods[i].Name < p.c.Methods[j].Name })
}

func (p *parser) topics(t *Node) {
	if t.Kind != KindObject {
		p.errs.add(errorAt(t, "topics must be an object of topic name to declaration"))
		return
	}
	for i, name := range t.Keys {
		d := t.Values[i]
		if !identPattern.MatchString(name) {
			p.errs.add(errorAt(d, "topic name %q must be an exported Go name: ASCII letters and digits, starting with an upper-case letter (it names generated Go types and functions)%s", name, exportedHint(name)))
		}
		if d.Kind != KindObject {
			p.errs.add(errorAt(d, "topic %s must be an object with object, key, writer and lostWriter", name))
			continue
		}
		p.only(d, "topic", "object", "key", "writer", "lostWriter", "selectors", "description")
		top := Topic{
			Name: name, Object: p.str(d, "object", true), Key: p.str(d, "key", true),
			Writer: handshake.Role(p.str(d, "writer", true)), LostWriter: handshake.LostWriterPolicy(p.str(d, "lostWriter", true)),
			Description: p.str(d, "description", false),
		}
		if v := d.Get("writer"); v != nil && v.Kind == KindString && top.Writer != handshake.RoleServer && top.Writer != handshake.RoleClient {
			p.errs.add(errorAt(v, "topic %s: writer must be server or client, not %q", name, v.Text))
		}
		if v := d.Get("lostWriter"); v != nil && v.Kind == KindString && top.LostWriter != handshake.LostWriterDelete && top.LostWriter != handshake.LostWriterKeep {
			p.errs.add(errorAt(v, "topic %s: lostWriter must be delete or keep, not %q", name, v.Text))
		}
		if v := d.Get("object"); v != nil && v.Kind == KindString {
			if msg := p.c.Message(v.Text); msg == nil {
				p.errs.add(errorAt(v, "topic %s: object %q is not an entry of schemas", name, v.Text))
			} else {
				if top.Key != "" && !hasProperty(msg.Schema, top.Key) {
					p.errs.add(errorAt(d.Get("key"), "topic %s: key %q is not a property of %s", name, top.Key, v.Text))
				}
				top.Selectors = p.selectors(name, d.Get("selectors"), msg)
			}
		}
		p.c.Topics = append(p.c.Topics, top)
	}
	sort.Slice(p.c.Topics, func(i, j int) bool { return p.c.Topics[i].Name < p.c.Topics[j].Name })
}

// selectors reads a topic's selectors: a list of distinct names of
// top-level members of its object whose values are strings, integers or
// booleans (a watch request names a value as text, so each must have one
// exact text form: a number such as 1.5 or 1e0 has several).
func (p *parser) selectors(topic string, list *Node, msg *Message) []Selector {
	if list == nil {
		return nil
	}
	if list.Kind != KindArray {
		p.errs.add(errorAt(list, "topic %s: selectors must be a list of field names, such as [nodeName]", topic))
		return nil
	}
	var out []Selector
	seen := map[string]bool{}
	for _, it := range list.Items {
		if it.Kind != KindString {
			p.errs.add(errorAt(it, "topic %s: a selector is a field name, not %s", topic, it.Kind))
			continue
		}
		field := it.Text
		switch {
		case seen[field]:
			p.errs.add(errorAt(it, "topic %s: selector %q is listed twice", topic, field))
			continue
		case field == protocol.QuerySince:
			p.errs.add(errorAt(it, "topic %s: selector %q is the watch request's resume parameter: select on another field", topic, field))
			continue
		}
		seen[field] = true
		prop := propertySchema(msg.Schema, field)
		if prop == nil {
			p.errs.add(errorAt(it, "topic %s: selector %q is not a property of %s", topic, field, msg.Name))
			continue
		}
		kind, why := scalarKind(prop)
		if why != "" {
			p.errs.add(errorAt(it, "topic %s: selector %q of %s %s; a selector must be a string, integer or boolean member", topic, field, msg.Name, why))
			continue
		}
		out = append(out, Selector{Field: field, Kind: kind})
	}
	return out
}

// propertySchema returns the schema of a property an object schema, or one
// it is built from by reference or allOf, declares; nil if none does.
func propertySchema(s *Node, name string) *Node {
	seen := map[*Node]bool{}
	var walk func(n *Node) *Node
	walk = func(n *Node) *Node {
		if n == nil || seen[n] || n.Kind != KindObject {
			return nil
		}
		seen[n] = true
		if props := n.Get("properties"); props != nil {
			if v := props.Get(name); v != nil {
				return v
			}
		}
		if v := walk(n.Ref); v != nil {
			return v
		}
		if all := n.Get("allOf"); all != nil {
			for _, it := range all.Items {
				if v := walk(it); v != nil {
					return v
				}
			}
		}
		return nil
	}
	return walk(s)
}

// scalarKind returns the JSON type a selector's schema admits: its type
// (null aside, which selects nothing), or, without one, the type every
// value of its enum or const shares. why says what is wrong otherwise.
func scalarKind(s *Node) (Kind, string) {
	for i := 0; i < 64 && s != nil && s.Kind == KindObject && s.Ref != nil && s.Get("type") == nil && s.Get("enum") == nil && s.Get("const") == nil; i++ {
		s = s.Ref
	}
	if s == nil || s.Kind != KindObject {
		return 0, "admits any value"
	}
	var types []string
	if t := s.Get("type"); t != nil {
		switch t.Kind {
		case KindString:
			types = []string{t.Text}
		case KindArray:
			for _, it := range t.Items {
				if it.Kind == KindString && it.Text != "null" {
					types = append(types, it.Text)
				}
			}
		}
	} else {
		var values []*Node
		if e := s.Get("enum"); e != nil && e.Kind == KindArray {
			values = e.Items
		}
		if c := s.Get("const"); c != nil {
			values = append(values, c)
		}
		for _, v := range values {
			name := v.Kind.String()
			if v.Kind == KindNumber {
				name = "integer"
				if _, ok := new(big.Int).SetString(v.Text, 10); !ok {
					name = "number"
				}
			}
			if v.Kind != KindNull && !slices.Contains(types, name) {
				types = append(types, name)
			}
		}
	}
	switch {
	case len(types) == 0:
		return 0, "declares no type"
	case len(types) > 1:
		return 0, "admits several types (" + strings.Join(types, ", ") + ")"
	}
	switch types[0] {
	case "string":
		return KindString, ""
	case "integer":
		return KindNumber, ""
	case "boolean":
		return KindBool, ""
	case "number":
		return 0, "is a number, which has many text forms (1, 1.0, 1e0)"
	}
	return 0, "is " + article(types[0]) + " " + types[0]
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// hasProperty reports whether an object schema, or one it is built from by
// reference or allOf, declares a property.
func hasProperty(s *Node, name string) bool { return propertySchema(s, name) != nil }

// messages reads, resolves and normalises every message schema.
func (p *parser) messages(schemas *Node) {
	z := &normaliser{r: p.r, copies: map[*Node]*Node{}, errs: p.errs}
	type entry struct {
		name string
		src  *Node
	}
	var entries []entry
	for i, name := range schemas.Keys {
		src := schemas.Values[i]
		if !identPattern.MatchString(name) {
			p.errs.add(errorAt(src, "message name %q must be an exported Go name: ASCII letters and digits, starting with an upper-case letter (it names a Go type)%s", name, exportedHint(name)))
			continue
		}
		if src.Kind != KindObject && src.Kind != KindBool {
			p.errs.add(errorAt(src, "schema of %s must be an object or a boolean, not %s", name, src.Kind))
			continue
		}
		draft := Draft2020
		if s := src.Get("$schema"); s != nil {
			d, e := declaredDraft(s)
			if e != nil {
				p.errs.add(e)
				continue
			}
			draft = d
		}
		p.r.index(src, p.r.docs[fileURL(p.c.File)].URL, draft, src, 0)
		entries = append(entries, entry{name, src})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	for _, e := range entries {
		norm := z.schema(e.src)
		ci := p.c.CaseInsensitive
		if v := e.src.Get(CaseInsensitiveKey); v != nil {
			if v.Kind != KindBool {
				p.errs.add(errorAt(v, "%s must be true or false", CaseInsensitiveKey))
			} else {
				ci = v.Bool
			}
		}
		p.c.Messages = append(p.c.Messages, &Message{Name: e.name, Schema: chaseRefs(norm), CaseInsensitive: ci})
	}
	if len(*p.errs) > 0 {
		return
	}
	for _, m := range p.c.Messages {
		b, at := bundle(m.Schema, m.CaseInsensitive)
		raw, _ := b.MarshalJSON()
		m.Bundle, m.pointers = raw, at
	}
	p.metaValidate(z.roots)
}

// annotationKeys may sit beside a "$ref" without making a new schema.
var annotationKeys = map[string]bool{"$ref": true, "title": true, "description": true, "$comment": true, "examples": true, "deprecated": true}

// chaseRefs follows a schema that is only a reference (plus annotations) to
// its target, so a message declared as {$ref: file} is the file's schema.
func chaseRefs(n *Node) *Node {
	for i := 0; i < 64 && n.Kind == KindObject && n.Ref != nil; i++ {
		for _, k := range n.Keys {
			if !annotationKeys[k] {
				return n
			}
		}
		n = n.Ref
	}
	return n
}

// check runs the checks that need every part read.
func (p *parser) check() {
	if p.c.Name == "" || p.c.Version == "" {
		return
	}
	h := p.c.Handshake()
	if _, err := handshake.Canonical(&h); err != nil {
		p.errs.add(&Error{File: p.r.displayPath(p.c.File), Message: fmt.Sprintf("canonical form: %v", err)})
	}
}
