package handshake

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// FingerprintPrefix names the canonicalisation algorithm. A change to the
// canonical form gets a new prefix, never a silent change of hashes.
const FingerprintPrefix = "lsfp1:"

// Fingerprint returns [FingerprintPrefix] followed by the lowercase hex
// SHA-256 of the contract's canonical form (see [Canonical]). Two sides whose
// contracts have equal fingerprints put the same bytes on the wire; a version
// shared with different fingerprints means someone changed the messages
// without bumping the version, and [Negotiate] refuses it.
func Fingerprint(c *Contract) (string, error) {
	canonical, err := Canonical(c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return FingerprintPrefix + hex.EncodeToString(sum[:]), nil
}

// Canonical returns the canonical form of a contract, the bytes that
// [Fingerprint] hashes. It is a protocol promise: every implementation of
// "lsfp1" must produce exactly these bytes, and golden vectors in the tests
// pin them. Any change to it needs a new [FingerprintPrefix].
//
// The canonical form is the RFC 8785 (JSON Canonicalization Scheme) form of
// this document, built field by field from the [Contract] (never from its Go
// struct tags):
//
//	{
//	  "contract": <Contract.Name>,
//	  "version":  <Contract.Version, verbatim: "2.0" and "2.0.0" differ, since call paths carry it>,
//	  "server":   <Contract.Server>,
//	  "client":   <Contract.Client>,
//	  "methods":  {<name>: {"request": string, "response": string,
//	                        "idempotent": bool, "batch": bool, "path": string,
//	                        "maxItems": number, present only when set}},
//	  "topics":   {<name>: {"object": string, "key": string,
//	                        "writer": string, "lostWriter": string,
//	                        "selectors": [string, ...], sorted by UTF-16 code units,
//	                                     present only when not empty}},
//	  "schemas":  {<name>: <the schema with its annotations removed>}
//	}
//
// Every member but maxItems and selectors is always present: empty strings as "", false flags as false,
// nil or empty maps as {}. RFC 8785 then fixes the rest: object members sorted
// by their UTF-16 code units, no insignificant whitespace, strings as UTF-8
// with only '"', '\' and control characters escaped (\b \t \n \f \r as such,
// the others as \u00xx), and numbers in their ECMAScript form, so 1, 1.0 and
// 1e0 are the same number and numbers that round to the same IEEE-754 double
// are the same number. The SHA-256 is taken over these bytes, with no
// trailing newline.
//
// Each schema is a self-contained JSON Schema document: an object or a
// boolean. Annotation removal knows where schemas sit. In every schema object
// it drops the keywords "title", "description", "examples" and "$comment",
// and it recurses into the keywords that hold subschemas in drafts 4, 6, 7,
// 2019-09 and 2020-12:
//
//   - maps of schemas: "properties", "patternProperties", "$defs",
//     "definitions", "dependentSchemas", and "dependencies" (whose values that
//     are arrays of property names are kept as they are);
//   - a schema or an array of schemas: "items";
//   - arrays of schemas: "prefixItems", "allOf", "anyOf", "oneOf";
//   - one schema: "not", "if", "then", "else", "additionalProperties",
//     "additionalItems", "contains", "propertyNames", "unevaluatedItems",
//     "unevaluatedProperties", "contentSchema".
//
// Nothing else is touched: a property named "description" (a key of
// "properties") stays, and so do the values of "enum", "const", "default",
// "required" and of every unknown keyword, whatever they contain. A keyword
// that should hold a schema but holds something else is kept as it is.
//
// Canonical fails, naming the culprit, when a schema is not valid JSON, has
// duplicate member names, holds a number outside the IEEE-754 double range or
// a string that is not valid Unicode (bad UTF-8, a lone surrogate), or is
// neither an object nor a boolean; and when a name or string field of the
// contract is not valid UTF-8.
func Canonical(c *Contract) ([]byte, error) {
	if c == nil {
		return nil, errors.New("handshake: canonical form of a nil contract")
	}
	if err := checkUTF8(c); err != nil {
		return nil, err
	}
	methods := make(map[string]any, len(c.Methods))
	for name, m := range c.Methods {
		method := map[string]any{
			"request":    m.Request,
			"response":   m.Response,
			"idempotent": m.Idempotent,
			"batch":      m.Batch,
			"path":       m.Path,
		}
		if m.MaxItems != 0 {
			method["maxItems"] = m.MaxItems
		}
		methods[name] = method
	}
	topics := make(map[string]any, len(c.Topics))
	for name, t := range c.Topics {
		topic := map[string]any{
			"object":     t.Object,
			"key":        t.Key,
			"writer":     string(t.Writer),
			"lostWriter": string(t.LostWriter),
		}
		if len(t.Selectors) > 0 {
			topic["selectors"] = sortedSelectors(t.Selectors)
		}
		topics[name] = topic
	}
	schemas := make(map[string]any, len(c.Schemas))
	for _, name := range sortedNames(c.Schemas) {
		schema, err := canonicalSchema(c.Schemas[name])
		if err != nil {
			return nil, fmt.Errorf("handshake: schema %q: %w", name, err)
		}
		schemas[name] = schema
	}
	document := map[string]any{
		"contract": c.Name,
		"version":  c.Version,
		"server":   c.Server,
		"client":   c.Client,
		"methods":  methods,
		"topics":   topics,
		"schemas":  schemas,
	}
	var encoded bytes.Buffer
	enc := json.NewEncoder(&encoded)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(document); err != nil {
		return nil, fmt.Errorf("handshake: encoding the canonical document: %w", err)
	}
	out, err := jcs.Transform(encoded.Bytes())
	if err != nil {
		return nil, fmt.Errorf("handshake: canonicalising the contract: %w", err)
	}
	return out, nil
}

// canonicalSchema parses one schema strictly and removes its annotations.
// The result holds json.Number values, so no number is rounded before
// RFC 8785 formats it.
func canonicalSchema(raw json.RawMessage) (any, error) {
	if !json.Valid(raw) {
		var syntax any
		err := json.Unmarshal(raw, &syntax)
		if err == nil {
			err = errors.New("unexpected end of JSON input")
		}
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	// RFC 8785 parsing is stricter than encoding/json: it rejects duplicate
	// member names (which encoding/json would silently collapse, last one
	// winning) and numbers no double can hold.
	strict, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("not I-JSON (RFC 7493): %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(strict))
	dec.UseNumber()
	var schema any
	if err := dec.Decode(&schema); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	switch schema.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("a JSON Schema must be an object or a boolean")
	}
	return stripAnnotations(schema), nil
}

// annotationKeywords are the keywords that describe a schema to people but
// never change which instances it accepts.
var annotationKeywords = map[string]bool{
	"title":       true,
	"description": true,
	"examples":    true,
	"$comment":    true,
}

// subschemaKind says how a keyword holds subschemas.
type subschemaKind int

const (
	// oneSubschema: the value is a schema.
	oneSubschema subschemaKind = iota + 1
	// subschemaArray: the value is an array of schemas.
	subschemaArray
	// subschemaMap: the value is an object whose member values are schemas.
	subschemaMap
	// schemaOrArray: "items", a schema or (drafts 4 to 2019-09) an array.
	schemaOrArray
	// schemaOrNames: "dependencies", an object whose member values are
	// schemas or arrays of property names.
	schemaOrNames
)

// subschemaKeywords lists every keyword of drafts 4 to 2020-12 that holds
// subschemas.
var subschemaKeywords = map[string]subschemaKind{
	"properties":            subschemaMap,
	"patternProperties":     subschemaMap,
	"$defs":                 subschemaMap,
	"definitions":           subschemaMap,
	"dependentSchemas":      subschemaMap,
	"dependencies":          schemaOrNames,
	"items":                 schemaOrArray,
	"prefixItems":           subschemaArray,
	"allOf":                 subschemaArray,
	"anyOf":                 subschemaArray,
	"oneOf":                 subschemaArray,
	"not":                   oneSubschema,
	"if":                    oneSubschema,
	"then":                  oneSubschema,
	"else":                  oneSubschema,
	"additionalProperties":  oneSubschema,
	"additionalItems":       oneSubschema,
	"contains":              oneSubschema,
	"propertyNames":         oneSubschema,
	"unevaluatedItems":      oneSubschema,
	"unevaluatedProperties": oneSubschema,
	"contentSchema":         oneSubschema,
}

// stripAnnotations returns schema without its annotation keywords, at every
// depth where a schema can sit. It rebuilds the objects it changes and
// shares everything else.
func stripAnnotations(schema any) any {
	obj, ok := schema.(map[string]any)
	if !ok {
		// Boolean schemas have no keywords; anything else is not a schema
		// and is kept verbatim.
		return schema
	}
	out := make(map[string]any, len(obj))
	for keyword, value := range obj {
		if annotationKeywords[keyword] {
			continue
		}
		switch subschemaKeywords[keyword] {
		case oneSubschema:
			value = stripAnnotations(value)
		case subschemaArray:
			value = stripEach(value)
		case subschemaMap:
			value = stripMembers(value, false)
		case schemaOrArray:
			if _, isArray := value.([]any); isArray {
				value = stripEach(value)
			} else {
				value = stripAnnotations(value)
			}
		case schemaOrNames:
			value = stripMembers(value, true)
		}
		out[keyword] = value
	}
	return out
}

// stripEach strips every element of an array of schemas.
func stripEach(value any) any {
	arr, ok := value.([]any)
	if !ok {
		return value
	}
	out := make([]any, len(arr))
	for i, element := range arr {
		out[i] = stripAnnotations(element)
	}
	return out
}

// stripMembers strips every member value of an object of schemas. With
// keepArrays, member values that are arrays (property-name lists of
// "dependencies") are kept as they are.
func stripMembers(value any, keepArrays bool) any {
	obj, ok := value.(map[string]any)
	if !ok {
		return value
	}
	out := make(map[string]any, len(obj))
	for name, member := range obj {
		if _, isArray := member.([]any); isArray && keepArrays {
			out[name] = member
			continue
		}
		out[name] = stripAnnotations(member)
	}
	return out
}

// checkUTF8 rejects contract strings that are not valid UTF-8: encoding them
// would replace the bad bytes with U+FFFD, so two different names could share
// a fingerprint.
func checkUTF8(c *Contract) error {
	var errs []error
	check := func(what, s string) {
		if !utf8.ValidString(s) {
			errs = append(errs, fmt.Errorf("handshake: %s %q is not valid UTF-8", what, s))
		}
	}
	check("contract name", c.Name)
	check("version", c.Version)
	check("server", c.Server)
	check("client", c.Client)
	for _, name := range sortedNames(c.Methods) {
		m := c.Methods[name]
		check("method name", name)
		check("method "+name+" request", m.Request)
		check("method "+name+" response", m.Response)
		check("method "+name+" path", m.Path)
	}
	for _, name := range sortedNames(c.Topics) {
		t := c.Topics[name]
		check("topic name", name)
		check("topic "+name+" object", t.Object)
		check("topic "+name+" key", t.Key)
		check("topic "+name+" writer", string(t.Writer))
		check("topic "+name+" lostWriter", string(t.LostWriter))
		for _, sel := range t.Selectors {
			check("topic "+name+" selector", sel)
		}
	}
	for _, name := range sortedNames(c.Schemas) {
		check("schema name", name)
	}
	return errors.Join(errs...)
}

// sortedSelectors returns a topic's selectors in the canonical order:
// sorted by UTF-16 code units, as RFC 8785 sorts member names, so that a
// peer in any language sorts them the same way.
func sortedSelectors(sel []string) []string {
	out := slices.Clone(sel)
	slices.SortFunc(out, func(a, b string) int {
		return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
	})
	return out
}

// sortedNames returns a map's keys in order, so errors come out in a stable
// order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
