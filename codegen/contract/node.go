package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Kind is the JSON type of a [Node].
type Kind uint8

// The JSON types a [Node] can hold.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// String names the kind as JSON Schema's "type" keyword does.
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindArray:
		return "array"
	case KindObject:
		return "object"
	}
	return "unknown"
}

// Node is one JSON value read from a contract or schema file, with its
// position, so every error can name a file, a line and a JSON pointer.
// Objects keep their members in file order, which the generator uses for
// struct field order.
//
// Nodes of normalised schemas (see [Message.Schema]) are copies: their
// Pointer is their place in the normalised tree, Origin is the node they were
// made from, and Ref is the resolved target of a "$ref" member.
type Node struct {
	// Kind is the JSON type.
	Kind Kind
	// Bool is the value of a boolean.
	Bool bool
	// Text is a string's value or a number's literal.
	Text string
	// Keys are an object's member names in order; Values holds the member
	// values at the same index.
	Keys   []string
	Values []*Node
	// Items are an array's elements.
	Items []*Node

	// Doc is the document the node belongs to.
	Doc *Document
	// Pointer is the node's JSON pointer from its document's root, or, for
	// normalised nodes, from its normalised root.
	Pointer string
	// Line and Col are the node's 1-based position in its file (0 if unknown).
	Line, Col int
	// Origin is, for a normalised node, the node it was made from.
	Origin *Node
	// Root is, for a normalised node, the root of its normalised tree.
	Root *Node
	// Ref is, for a normalised schema object with "$ref", the normalised
	// target.
	Ref *Node
}

// Get returns the value of an object member, or nil.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != KindObject {
		return nil
	}
	for i, k := range n.Keys {
		if k == key {
			return n.Values[i]
		}
	}
	return nil
}

// Has reports whether an object has a member.
func (n *Node) Has(key string) bool { return n.Get(key) != nil }

// Source returns the original node a normalised node was made from, or n.
func (n *Node) Source() *Node {
	for n != nil && n.Origin != nil {
		n = n.Origin
	}
	return n
}

// Where describes the node's position as "file:line:col".
func (n *Node) Where() string {
	s := n.Source()
	if s == nil || s.Doc == nil {
		return ""
	}
	if s.Line == 0 {
		return s.Doc.Path
	}
	return fmt.Sprintf("%s:%d:%d", s.Doc.Path, s.Line, s.Col)
}

// Interface converts the node to the values encoding/json produces with
// UseNumber: map[string]any, []any, string, json.Number, bool, nil.
func (n *Node) Interface() any {
	switch n.Kind {
	case KindBool:
		return n.Bool
	case KindNumber:
		return json.Number(n.Text)
	case KindString:
		return n.Text
	case KindArray:
		out := make([]any, len(n.Items))
		for i, it := range n.Items {
			out[i] = it.Interface()
		}
		return out
	case KindObject:
		out := make(map[string]any, len(n.Keys))
		for i, k := range n.Keys {
			out[k] = n.Values[i].Interface()
		}
		return out
	}
	return nil
}

// MarshalJSON writes the node as compact JSON, members in their order.
func (n *Node) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	n.writeJSON(&b)
	return b.Bytes(), nil
}

func (n *Node) writeJSON(b *bytes.Buffer) {
	switch n.Kind {
	case KindNull:
		b.WriteString("null")
	case KindBool:
		b.WriteString(strconv.FormatBool(n.Bool))
	case KindNumber:
		b.WriteString(n.Text)
	case KindString:
		writeJSONString(b, n.Text)
	case KindArray:
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			it.writeJSON(b)
		}
		b.WriteByte(']')
	case KindObject:
		b.WriteByte('{')
		for i, k := range n.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			n.Values[i].writeJSON(b)
		}
		b.WriteByte('}')
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // strings always marshal
	b.Write(enc)
}

// Equal reports whether two nodes hold the same JSON value (numbers compared
// by value, object members regardless of order).
func (n *Node) Equal(o *Node) bool {
	if n.Kind != o.Kind {
		return false
	}
	switch n.Kind {
	case KindBool:
		return n.Bool == o.Bool
	case KindNumber:
		a, okA := new(big.Rat).SetString(n.Text)
		b, okB := new(big.Rat).SetString(o.Text)
		return okA && okB && a.Cmp(b) == 0
	case KindString:
		return n.Text == o.Text
	case KindArray:
		if len(n.Items) != len(o.Items) {
			return false
		}
		for i := range n.Items {
			if !n.Items[i].Equal(o.Items[i]) {
				return false
			}
		}
		return true
	case KindObject:
		if len(n.Keys) != len(o.Keys) {
			return false
		}
		for i, k := range n.Keys {
			ov := o.Get(k)
			if ov == nil || !n.Values[i].Equal(ov) {
				return false
			}
		}
		return true
	}
	return true
}

// escapePointerToken escapes one JSON pointer reference token.
func escapePointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// unescapePointerToken undoes [escapePointerToken].
func unescapePointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// child returns the pointer of a member or element below p.
func child(p string, token string) string { return p + "/" + escapePointerToken(token) }

// Lookup follows a JSON pointer (RFC 6901) from n.
func (n *Node) Lookup(pointer string) (*Node, error) {
	if pointer == "" {
		return n, nil
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("JSON pointer %q must start with /", pointer)
	}
	cur := n
	for _, raw := range strings.Split(pointer[1:], "/") {
		tok := unescapePointerToken(raw)
		switch cur.Kind {
		case KindObject:
			next := cur.Get(tok)
			if next == nil {
				return nil, fmt.Errorf("JSON pointer %q: no member %q", pointer, tok)
			}
			cur = next
		case KindArray:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.Items) || (len(tok) > 1 && tok[0] == '0') {
				return nil, fmt.Errorf("JSON pointer %q: no element %q", pointer, tok)
			}
			cur = cur.Items[i]
		default:
			return nil, fmt.Errorf("JSON pointer %q: %s has no member %q", pointer, cur.Kind, tok)
		}
	}
	return cur, nil
}

// setPointers fills Doc and Pointer for a parsed tree.
func setPointers(n *Node, doc *Document, p string) {
	n.Doc, n.Pointer = doc, p
	for i, k := range n.Keys {
		setPointers(n.Values[i], doc, child(p, k))
	}
	for i, it := range n.Items {
		setPointers(it, doc, child(p, strconv.Itoa(i)))
	}
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 512

// parseJSON reads one JSON value with positions. Duplicate member names and
// trailing data are errors.
func parseJSON(data []byte) (*Node, error) {
	p := &jsonParser{data: data, line: 1, col: 1}
	p.skipSpace()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errorf("unexpected data after the JSON value")
	}
	return n, nil
}

type jsonParser struct {
	data           []byte
	pos, line, col int
}

// PosError is a syntax error at a position in a file's text.
type PosError struct {
	Line, Col int
	Msg       string
}

func (e *PosError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

func (p *jsonParser) errorf(format string, args ...any) error {
	return &PosError{Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) advance(n int) {
	for i := 0; i < n && p.pos < len(p.data); i++ {
		if p.data[p.pos] == '\n' {
			p.line++
			p.col = 1
		} else {
			p.col++
		}
		p.pos++
	}
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.advance(1)
		default:
			return
		}
	}
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`)

func (p *jsonParser) value(depth int) (*Node, error) {
	if depth > maxDepth {
		return nil, p.errorf("nesting deeper than %d", maxDepth)
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	n := &Node{Line: p.line, Col: p.col}
	rest := p.data[p.pos:]
	switch c := rest[0]; {
	case c == '{':
		n.Kind = KindObject
		p.advance(1)
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.advance(1)
			return n, nil
		}
		seen := map[string]bool{}
		for {
			p.skipSpace()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return nil, p.errorf("expected a member name in double quotes")
			}
			keyLine, keyCol := p.line, p.col
			key, err := p.str()
			if err != nil {
				return nil, err
			}
			if seen[key] {
				return nil, &PosError{Line: keyLine, Col: keyCol, Msg: fmt.Sprintf("duplicate member %q", key)}
			}
			seen[key] = true
			p.skipSpace()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.errorf("expected ':' after member name")
			}
			p.advance(1)
			p.skipSpace()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Keys = append(n.Keys, key)
			n.Values = append(n.Values, v)
			p.skipSpace()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.advance(1)
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == '}' {
				p.advance(1)
				return n, nil
			}
			return nil, p.errorf("expected ',' or '}' in object")
		}
	case c == '[':
		n.Kind = KindArray
		p.advance(1)
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.advance(1)
			n.Items = []*Node{}
			return n, nil
		}
		for {
			p.skipSpace()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, v)
			p.skipSpace()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.advance(1)
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == ']' {
				p.advance(1)
				return n, nil
			}
			return nil, p.errorf("expected ',' or ']' in array")
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		n.Kind, n.Text = KindString, s
		return n, nil
	case bytes.HasPrefix(rest, []byte("true")):
		n.Kind, n.Bool = KindBool, true
		p.advance(4)
		return n, nil
	case bytes.HasPrefix(rest, []byte("false")):
		n.Kind = KindBool
		p.advance(5)
		return n, nil
	case bytes.HasPrefix(rest, []byte("null")):
		n.Kind = KindNull
		p.advance(4)
		return n, nil
	default:
		m := jsonNumber.Find(rest)
		if m == nil {
			return nil, p.errorf("unexpected character %q", rune(c))
		}
		n.Kind, n.Text = KindNumber, string(m)
		p.advance(len(m))
		return n, nil
	}
}

// str reads a JSON string starting at the opening quote.
func (p *jsonParser) str() (string, error) {
	end := p.pos + 1
	for end < len(p.data) {
		switch p.data[end] {
		case '\\':
			end += 2
			continue
		case '"':
			var s string
			if err := json.Unmarshal(p.data[p.pos:end+1], &s); err != nil {
				return "", p.errorf("invalid string: %v", err)
			}
			p.advance(end + 1 - p.pos)
			return s, nil
		case '\n':
			return "", p.errorf("unterminated string")
		}
		end++
	}
	return "", p.errorf("unterminated string")
}

// parseYAML reads one YAML document as JSON values with positions. Only what
// JSON can express is accepted: string keys, no infinities, no merge keys.
func parseYAML(data []byte) (*Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 {
		return nil, &PosError{Line: 1, Col: 1, Msg: "empty document"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) != 1 {
			return nil, &PosError{Line: 1, Col: 1, Msg: "expected exactly one YAML document"}
		}
		root = root.Content[0]
	}
	return fromYAML(root, 0)
}

func yamlErr(y *yaml.Node, format string, args ...any) error {
	return &PosError{Line: y.Line, Col: y.Column, Msg: fmt.Sprintf(format, args...)}
}

func fromYAML(y *yaml.Node, depth int) (*Node, error) {
	if depth > maxDepth {
		return nil, yamlErr(y, "nesting deeper than %d", maxDepth)
	}
	n := &Node{Line: y.Line, Col: y.Column}
	switch y.Kind {
	case yaml.AliasNode:
		return nil, yamlErr(y, "YAML aliases are not supported in contracts; repeat the value or use $ref")
	case yaml.MappingNode:
		n.Kind = KindObject
		seen := map[string]bool{}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, yamlErr(k, "object keys must be strings")
			}
			if k.Tag == "!!merge" {
				return nil, yamlErr(k, "YAML merge keys (<<) are not supported in contracts")
			}
			if seen[k.Value] {
				return nil, yamlErr(k, "duplicate member %q", k.Value)
			}
			seen[k.Value] = true
			if y.Style&yaml.FlowStyle != 0 && v.Tag == "!!null" && v.Value == "" {
				// {description: a, b} parses as two members, the second "b" with
				// no value: almost always prose cut short by an unquoted comma.
				return nil, yamlErr(k, "member %q has no value: a comma ends an unquoted scalar in a {...} mapping; quote the text before it", k.Value)
			}
			cv, err := fromYAML(v, depth+1)
			if err != nil {
				return nil, err
			}
			n.Keys = append(n.Keys, k.Value)
			n.Values = append(n.Values, cv)
		}
	case yaml.SequenceNode:
		n.Kind = KindArray
		n.Items = []*Node{}
		for _, c := range y.Content {
			cv, err := fromYAML(c, depth+1)
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, cv)
		}
	case yaml.ScalarNode:
		switch y.ShortTag() {
		case "!!null":
			n.Kind = KindNull
		case "!!bool":
			var b bool
			if err := y.Decode(&b); err != nil {
				return nil, yamlErr(y, "%v", err)
			}
			n.Kind, n.Bool = KindBool, b
		case "!!int", "!!float":
			n.Kind = KindNumber
			if jsonNumber.FindString(y.Value) == y.Value {
				n.Text = y.Value
				break
			}
			var v any
			if err := y.Decode(&v); err != nil {
				return nil, yamlErr(y, "%v", err)
			}
			switch v := v.(type) {
			case int:
				n.Text = strconv.Itoa(v)
			case int64:
				n.Text = strconv.FormatInt(v, 10)
			case uint64:
				n.Text = strconv.FormatUint(v, 10)
			case float64:
				b, err := json.Marshal(v)
				if err != nil {
					return nil, yamlErr(y, "%s is not a JSON number", y.Value)
				}
				n.Text = string(b)
			default:
				return nil, yamlErr(y, "%s is not a JSON number", y.Value)
			}
		case "!!str", "!!timestamp":
			n.Kind, n.Text = KindString, y.Value
		default:
			return nil, yamlErr(y, "YAML tag %s has no JSON equivalent", y.Tag)
		}
	default:
		return nil, yamlErr(y, "unexpected YAML node")
	}
	return n, nil
}
