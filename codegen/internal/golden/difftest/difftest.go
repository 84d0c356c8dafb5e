// Package difftest checks generated decoders and validators against the
// reference, jsonschema/v5 with the runtime's settings, on a corpus built
// deterministically from a seed: valid instances written by hand, instances
// generated from each message's bundled schema, and many mutations of both
// (members dropped, added or renamed, values of the wrong type, numbers
// out of range, bad formats, nulls, enum values of other members, too many
// items, duplicates…). For every instance the generated path (decode,
// then Validate, as the runtime runs it) and the reference (the JSON is
// well-formed and jsonschema/v5 accepts it) must give the same verdict.
//
// Three differences are tolerated, counted and reported, never silently
// passed: a value the schema accepts but the Go type cannot hold (an
// integer beyond int64, a number beyond float64), which the generated
// decoder refuses with jsonwire.ErrUnrepresentable; and a value an
// x-go-type refuses (jsonwire.ErrExternal), which the contract chose. The
// runtime refuses these two either way, since they do not decode. The
// third goes the other way: a number too long or with too large an
// exponent for the reference to read safely (framework.ErrNumberOutOfRange),
// where the schema says nothing of it, which the generated decoder keeps
// as it is. A message that is null where its schema allows null is
// counted (NullMessage) but not tolerated: a message's Go type holds every
// value its schema admits, null included.
package difftest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Message is one message of a generated package under test.
type Message struct {
	// Name is the message's name in the contract.
	Name string
	// Seeds are valid instances written by hand.
	Seeds []string
	// check runs the generated path on an instance, as the runtime runs
	// it: through json.Unmarshal.
	check func(c *framework.Contract, data []byte) error
	// direct is check calling the generated UnmarshalJSON directly, without
	// encoding/json's syntax check first.
	direct func(c *framework.Contract, data []byte) error
	// generated reports whether the message's type has a generated
	// Validate.
	generated bool
	// caseInsensitive makes the reference validate the decoded message
	// re-encoded, as the runtime does for such messages.
	decodeEncode func(data []byte) ([]byte, error)
	// encodeDiff decodes an instance and compares the type's generated
	// encoder (AppendJSON) with json.Marshal; it reports whether it
	// compared (the instance decoded and the type has an encoder).
	encodeDiff func(data []byte) (bool, error)
}

// For describes message name, decoded into T, with valid seed instances.
func For[T any](name string, seeds ...string) Message {
	return ForNew(name, func() any { return new(T) }, seeds...)
}

// ForNew is [For] for the type of the values newValue returns (each call a
// pointer to a new zero value). The checks are compiled once for every
// type, where a type parameter would compile them again for each: the
// real-world corpus check describes 65 types in one package.
func ForNew(name string, newValue func() any, seeds ...string) Message {
	_, generated := newValue().(framework.Validator)
	return Message{
		Name: name, Seeds: seeds, generated: generated,
		check: func(c *framework.Contract, data []byte) error {
			v := newValue()
			if val, ok := v.(framework.Validator); ok {
				if err := json.Unmarshal(data, v); err != nil {
					return err
				}
				return val.Validate()
			}
			if err := c.ValidateJSON(name, data); err != nil {
				return err
			}
			return json.Unmarshal(data, v)
		},
		direct: func(c *framework.Contract, data []byte) error {
			v := newValue()
			u, ok := v.(json.Unmarshaler)
			val, validates := v.(framework.Validator)
			if !ok || !validates {
				return nil
			}
			if err := u.UnmarshalJSON(data); err != nil {
				return err
			}
			return val.Validate()
		},
		decodeEncode: func(data []byte) ([]byte, error) {
			v := newValue()
			if err := json.Unmarshal(data, v); err != nil {
				return nil, err
			}
			return json.Marshal(v)
		},
		encodeDiff: func(data []byte) (bool, error) {
			v := newValue()
			if _, ok := v.(jsonwire.Appender); !ok || json.Unmarshal(data, v) != nil {
				return false, nil
			}
			return true, EncodersAgree(v)
		},
	}
}

// EncodersAgree checks that v's generated encoder writes exactly what
// json.Marshal writes for it, or fails where json.Marshal fails. v must
// implement jsonwire.Appender.
func EncodersAgree(v any) error {
	want, wantErr := json.Marshal(v)
	got, gotErr := v.(jsonwire.Appender).AppendJSON(nil)
	switch {
	case (wantErr == nil) != (gotErr == nil):
		return fmt.Errorf("AppendJSON error %v, json.Marshal error %v", gotErr, wantErr)
	case wantErr == nil && !bytes.Equal(got, want):
		return fmt.Errorf("AppendJSON wrote\n  %s\njson.Marshal wrote\n  %s", got, want)
	}
	return nil
}

// Verdict is the outcome of one instance on both paths.
type Verdict struct {
	// Generated and Reference are the errors of the generated path and
	// of the reference (nil when the instance is valid).
	Generated, Reference error
	// Unrepresentable, External and OutOfRange mark the tolerated
	// differences; NullMessage a null message the generated path
	// refuses, which is not tolerated.
	Unrepresentable, External, NullMessage, OutOfRange bool
	// DirectDiffers reports that calling the generated UnmarshalJSON
	// directly gave another verdict than json.Unmarshal.
	DirectDiffers bool
	// Encoded reports that the instance decoded and its generated encoder
	// was compared with json.Marshal; EncodeDiffers is how they differed.
	Encoded       bool
	EncodeDiffers error
}

// Agree reports whether the paths agree.
func (v Verdict) Agree() bool {
	return !v.DirectDiffers && v.EncodeDiffers == nil && ((v.Generated == nil) == (v.Reference == nil) || v.Unrepresentable || v.External || v.OutOfRange)
}

// Compare runs one instance of a message on both paths.
func Compare(c *framework.Contract, m Message, data []byte, caseInsensitive bool) Verdict {
	v := Verdict{Generated: m.check(c, data)}
	if m.encodeDiff != nil {
		v.Encoded, v.EncodeDiffers = m.encodeDiff(data)
	}
	if m.generated {
		v.DirectDiffers = (m.direct(c, data) == nil) != (v.Generated == nil)
	}
	switch {
	case !json.Valid(data):
		v.Reference = errors.New("not well-formed JSON")
	case caseInsensitive:
		canonical, err := m.decodeEncode(data)
		if err != nil {
			v.Reference = err
		} else {
			v.Reference = c.ValidateJSON(m.Name, canonical)
		}
	default:
		v.Reference = c.ValidateJSON(m.Name, data)
	}
	v.Unrepresentable = v.Reference == nil && errors.Is(v.Generated, jsonwire.ErrUnrepresentable)
	v.External = v.Reference == nil && errors.Is(v.Generated, jsonwire.ErrExternal)
	v.NullMessage = v.Reference == nil && v.Generated != nil && string(bytes.TrimSpace(data)) == "null"
	v.OutOfRange = v.Generated == nil && errors.Is(v.Reference, framework.ErrNumberOutOfRange)
	return v
}

// Stats counts a corpus run.
type Stats struct {
	Instances, Valid, Invalid, Unrepresentable, External, NullMessage, OutOfRange, Mismatches int
	// Encoded counts the instances whose generated encoder was compared
	// with json.Marshal.
	Encoded int
}

// Options tune a run.
type Options struct {
	// Seed makes the corpus; the same seed gives the same corpus.
	Seed uint64
	// Generated is the number of instances generated from each schema.
	Generated int
	// Mutants is the number of mutants of each valid instance.
	Mutants int
	// CaseInsensitive marks a contract whose messages match member names
	// regardless of case.
	CaseInsensitive bool
}

// SeedsVariable names the environment variable that widens the corpus: with
// LOCKSTEP_DIFFTEST_SEEDS=50, every message is checked on the corpora of 50
// seeds instead of one (a long run, for hunting disagreements).
const SeedsVariable = "LOCKSTEP_DIFFTEST_SEEDS"

func extraSeeds() uint64 {
	n, err := strconv.ParseUint(os.Getenv(SeedsVariable), 10, 32)
	if err != nil || n == 0 {
		return 1
	}
	return n
}

// Run checks every message of a contract on its corpus and fails t on the
// first disagreements. It reports the corpus size and verdicts.
func Run(t *testing.T, c *framework.Contract, opts Options, messages ...Message) Stats {
	t.Helper()
	if opts.Generated == 0 {
		opts.Generated = 60
	}
	if opts.Mutants == 0 {
		opts.Mutants = 16
	}
	var total Stats
	model := c.Model()
	for _, m := range messages {
		schema, ok := model.Schemas[m.Name]
		if !ok {
			t.Fatalf("contract %s has no message %s", c.Name(), m.Name)
		}
		var corpus [][]byte
		for i := uint64(0); i < extraSeeds(); i++ {
			c, err := Corpus(schema, m.Seeds, opts.Seed+i*1000, opts.Generated, opts.Mutants)
			if err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
			corpus = append(corpus, c...)
		}
		var s Stats
		for _, inst := range corpus {
			v := Compare(c, m, inst, opts.CaseInsensitive)
			s.Instances++
			if v.Encoded {
				s.Encoded++
			}
			switch {
			case v.EncodeDiffers != nil:
				s.Mismatches++
				if s.Mismatches <= 5 {
					t.Errorf("%s: the generated encoder differs from encoding/json: %v\n  instance: %s", m.Name, v.EncodeDiffers, inst)
				}
			case !v.Agree():
				s.Mismatches++
				if s.Mismatches <= 5 {
					t.Errorf("%s: generated says %s, jsonschema/v5 says %s (UnmarshalJSON called directly differs: %v)\n  instance: %s",
						m.Name, verdictText(v.Generated), verdictText(v.Reference), v.DirectDiffers, inst)
				}
			case v.Unrepresentable:
				s.Unrepresentable++
			case v.External:
				s.External++
			case v.NullMessage:
				s.NullMessage++
			case v.OutOfRange:
				s.OutOfRange++
			case v.Reference == nil:
				s.Valid++
			default:
				s.Invalid++
			}
		}
		for _, seed := range m.Seeds {
			if v := Compare(c, m, []byte(seed), opts.CaseInsensitive); v.Reference != nil || v.Generated != nil {
				t.Errorf("%s: seed is not valid: generated %s, reference %s\n%s", m.Name, verdictText(v.Generated), verdictText(v.Reference), seed)
			}
		}
		how := "decode + generated Validate"
		if !m.generated {
			how = "jsonschema/v5 + decode (no generated Validate)"
		}
		t.Logf("%s [%s]: %d instances: %d valid, %d invalid, %d unrepresentable, %d refused by an x-go-type, %d null messages, %d numbers out of the reference's range, %d mismatches; %d encoded by AppendJSON and json.Marshal alike",
			m.Name, how, s.Instances, s.Valid, s.Invalid, s.Unrepresentable, s.External, s.NullMessage, s.OutOfRange, s.Mismatches, s.Encoded)
		if s.Valid == 0 || s.Invalid == 0 && !acceptsAll(schema) {
			t.Errorf("%s: the corpus is one-sided (%d valid, %d invalid)", m.Name, s.Valid, s.Invalid)
		}
		total.Instances += s.Instances
		total.Valid += s.Valid
		total.Invalid += s.Invalid
		total.Unrepresentable += s.Unrepresentable
		total.External += s.External
		total.NullMessage += s.NullMessage
		total.OutOfRange += s.OutOfRange
		total.Mismatches += s.Mismatches
		total.Encoded += s.Encoded
	}
	return total
}

// acceptsAll reports whether a bundled schema is true or has only
// annotations: no instance can be invalid.
func acceptsAll(schema json.RawMessage) bool {
	v, err := decode(schema)
	if err != nil {
		return false
	}
	if b, ok := v.(bool); ok {
		return b
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k := range m {
		switch k {
		case "$schema", "title", "description", "$comment", "examples", "default":
		default:
			return false
		}
	}
	return true
}

func verdictText(err error) string {
	if err == nil {
		return "valid"
	}
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return "invalid (" + s + ")"
}

// Corpus builds the instances of one message: the seeds, instances
// generated from the schema, and mutants of every instance.
func Corpus(schema json.RawMessage, seeds []string, seed uint64, generated, mutants int) ([][]byte, error) {
	root, err := decode(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	g := &gen{root: root, rng: rand.New(rand.NewPCG(seed, 0x5eed)), dict: newDictionary(root)}
	var base []any
	for _, s := range seeds {
		v, err := decode([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("seed %s: %w", s, err)
		}
		base = append(base, v)
		g.dict.addValues(v)
	}
	for i := 0; i < generated; i++ {
		g.nodes = 0
		base = append(base, g.instance(root, 0))
	}
	var out [][]byte
	for _, b := range base {
		out = append(out, encode(b))
		for i := 0; i < mutants; i++ {
			out = append(out, g.mutant(b))
		}
	}
	return out, nil
}

func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("lockstep: difftest: " + err.Error())
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// dictionary holds values worth trying, gathered from the schema and the
// seeds: enum and const values, bounds and their neighbours, property
// names, strings that match patterns, and formats' valid and invalid
// spellings.
type dictionary struct {
	values []any
	names  []string
	strs   []string
}

var formatSamples = []string{
	"2026-11-30T05:00:00Z", "2026-11-30t05:00:00.123456789+01:00", "1990-12-31T23:59:60Z", "2026-02-30T05:00:00Z",
	"2026-11-30T25:00:00Z", "2026-11-30 05:00:00Z", "2026-11-30", "2026-1-30", "05:00:00Z", "P1D", "PT1H30M", "P",
	"x@example.com", "not-an-email", "a@", "node-7.example.com", "-bad-", "10.0.0.7", "10.0.0.256", "::1", "fe80::1::2",
	"https://example.com/a?b#c", "not a uri", "/relative", "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456",
	"", "a", "A", "ab", "abc", "ABC", "a-b", "snake_case", "node-0007", "Node-7", "3800m", "16Gi", "110", "1.5", "-1",
	"+3", "1e3", "Ready", "True", "False", "Unknown", "x-extension", "X_Y", "USD", "usd", "tcp", "udp", "on-failure",
	"é", "日本語", "\u0000", "a\nb", strings.Repeat("x", 300),
}

func newDictionary(root any) *dictionary {
	d := &dictionary{}
	for _, s := range formatSamples {
		d.strs = append(d.strs, s)
		d.values = append(d.values, s)
	}
	d.values = append(d.values, []any{nil, true, false, json.Number("0"), json.Number("-1"), json.Number("1"), json.Number("1.0"),
		json.Number("1.5"), json.Number("65535"), json.Number("65536"), json.Number("2147483648"), json.Number("9223372036854775807"),
		json.Number("9223372036854775808"), json.Number("-9223372036854775809"), json.Number("1e300"), json.Number("1e400"),
		json.Number("1E2"), json.Number("-0"), json.Number("0.1"), []any{}, map[string]any{}, []any{nil}, map[string]any{"a": json.Number("1")}}...)
	d.addSchema(root, 0)
	return d
}

// addSchema gathers constants from a schema tree.
func (d *dictionary) addSchema(s any, depth int) {
	if depth > 64 {
		return
	}
	switch s := s.(type) {
	case map[string]any:
		for _, k := range sortedKeys(s) {
			v := s[k]
			switch k {
			case "enum":
				if items, ok := v.([]any); ok {
					d.values = append(d.values, items...)
				}
			case "const":
				d.values = append(d.values, v)
			case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
				if n, ok := v.(json.Number); ok {
					d.values = append(d.values, n, addNumber(n, 1), addNumber(n, -1), addNumber(n, 0.5))
				}
			case "minLength", "maxLength":
				if n, ok := v.(json.Number); ok {
					if l, err := n.Int64(); err == nil && l < 1000 {
						for _, x := range []int64{l - 1, l, l + 1} {
							if x >= 0 {
								d.strs = append(d.strs, strings.Repeat("a", int(x)))
								d.values = append(d.values, strings.Repeat("a", int(x)))
							}
						}
					}
				}
			case "properties", "patternProperties", "$defs", "dependentRequired", "dependentSchemas":
				if m, ok := v.(map[string]any); ok && k != "$defs" {
					d.names = append(d.names, sortedKeys(m)...)
				}
			case "required":
				if items, ok := v.([]any); ok {
					for _, it := range items {
						if n, ok := it.(string); ok {
							d.names = append(d.names, n)
						}
					}
				}
			}
			d.addSchema(v, depth+1)
		}
	case []any:
		for _, it := range s {
			d.addSchema(it, depth+1)
		}
	}
}

// addValues gathers the strings and names of a valid instance.
func (d *dictionary) addValues(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(v) {
			d.names = append(d.names, k)
			d.addValues(v[k])
		}
	case []any:
		for _, x := range v {
			d.addValues(x)
		}
	case string:
		d.strs = append(d.strs, v)
		d.values = append(d.values, v)
	case json.Number:
		d.values = append(d.values, v)
	}
}

func addNumber(n json.Number, delta float64) json.Number {
	f, err := n.Float64()
	if err != nil {
		return n
	}
	return finite(f+delta, n)
}

// finite spells f as a JSON number, or returns fallback when f is not
// finite.
func finite(f float64, fallback json.Number) json.Number {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fallback
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// gen generates and mutates instances.
type gen struct {
	root any
	rng  *rand.Rand
	dict *dictionary
	// nodes counts the values of the instance being generated; past
	// nodeBudget, optional members are left out, so that wide recursive
	// schemas (every member a reference to the root) make instances of
	// bounded size.
	nodes int
}

// nodeBudget bounds the size of one generated instance.
const nodeBudget = 400

func (g *gen) pick(n int) int { return g.rng.IntN(n) }

// value returns a copy of a dictionary value.
func (g *gen) value() any { return clone(g.dict.values[g.pick(len(g.dict.values))]) }

func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }

// resolve follows "#/…" references within the bundle.
func (g *gen) resolve(ref string) any {
	if !strings.HasPrefix(ref, "#") {
		return true
	}
	cur := g.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if t, err := unescapeURI(tok); err == nil {
			tok = t
		}
		m, ok := cur.(map[string]any)
		if !ok {
			if arr, ok := cur.([]any); ok {
				var i int
				if _, err := fmt.Sscan(tok, &i); err == nil && i >= 0 && i < len(arr) {
					cur = arr[i]
					continue
				}
			}
			return true
		}
		cur = m[tok]
	}
	if cur == nil {
		return true
	}
	return cur
}

func unescapeURI(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02x", &c); err != nil {
				return "", err
			}
			b.WriteByte(c)
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// instance generates a value meant to be valid for schema s: often it is,
// sometimes not, and the verdicts are compared either way.
func (g *gen) instance(s any, depth int) any {
	g.nodes++
	sch, ok := s.(map[string]any)
	if !ok {
		if b, isBool := s.(bool); isBool && !b {
			return nil
		}
		return g.anyValue(depth)
	}
	if depth > 8 {
		return g.anyValue(depth)
	}
	// Combine the parts that apply: the schema itself, its $ref, its
	// allOf, and one branch of each oneOf/anyOf.
	parts := []map[string]any{sch}
	var collect func(m map[string]any, d int)
	collect = func(m map[string]any, d int) {
		if d > 16 {
			return
		}
		if ref, ok := m["$ref"].(string); ok {
			if t, ok := g.resolve(ref).(map[string]any); ok {
				parts = append(parts, t)
				collect(t, d+1)
			}
		}
		if all, ok := m["allOf"].([]any); ok {
			for _, p := range all {
				if pm, ok := p.(map[string]any); ok {
					parts = append(parts, pm)
					collect(pm, d+1)
				}
			}
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			if list, ok := m[k].([]any); ok && len(list) > 0 {
				if pm, ok := list[g.pick(len(list))].(map[string]any); ok {
					parts = append(parts, pm)
					collect(pm, d+1)
				}
			}
		}
	}
	collect(sch, 0)
	merged := map[string]any{}
	for _, p := range parts {
		for _, k := range sortedKeys(p) {
			v := p[k]
			switch k {
			case "properties", "patternProperties":
				dst, _ := merged[k].(map[string]any)
				if dst == nil {
					dst = map[string]any{}
				}
				if src, ok := v.(map[string]any); ok {
					for _, name := range sortedKeys(src) {
						ps := src[name]
						if _, had := dst[name]; !had || ps != true {
							dst[name] = ps
						}
					}
				}
				merged[k] = dst
			case "required":
				prev, _ := merged[k].([]any)
				if src, ok := v.([]any); ok {
					merged[k] = append(append([]any{}, prev...), src...)
				}
			case "$ref", "allOf", "oneOf", "anyOf":
			default:
				if _, had := merged[k]; !had {
					merged[k] = v
				}
			}
		}
	}
	if e, ok := merged["enum"].([]any); ok && len(e) > 0 {
		return e[g.pick(len(e))]
	}
	if c, ok := merged["const"]; ok {
		return c
	}
	return g.ofType(merged, g.typeOf(merged), depth)
}

// typeOf picks the JSON type to generate for a merged schema.
func (g *gen) typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			if n, ok := t[g.pick(len(t))].(string); ok {
				return n
			}
		}
	}
	for _, k := range []string{"properties", "required", "additionalProperties", "patternProperties"} {
		if _, ok := s[k]; ok {
			return "object"
		}
	}
	for _, k := range []string{"items", "prefixItems", "minItems", "maxItems"} {
		if _, ok := s[k]; ok {
			return "array"
		}
	}
	for _, k := range []string{"pattern", "minLength", "maxLength", "format"} {
		if _, ok := s[k]; ok {
			return "string"
		}
	}
	for _, k := range []string{"minimum", "maximum", "multipleOf"} {
		if _, ok := s[k]; ok {
			return "number"
		}
	}
	return []string{"string", "integer", "boolean", "object", "array", "null"}[g.pick(6)]
}

func (g *gen) anyValue(depth int) any {
	if depth > 6 || g.chance(0.7) {
		return g.value()
	}
	return map[string]any{"k": g.value()}
}

func number(s map[string]any, k string) (float64, bool) {
	n, ok := s[k].(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func (g *gen) ofType(s map[string]any, t string, depth int) any {
	switch t {
	case "null":
		return nil
	case "boolean":
		return g.chance(0.5)
	case "integer", "number":
		lo, hasLo := number(s, "minimum")
		hi, hasHi := number(s, "maximum")
		if x, ok := number(s, "exclusiveMinimum"); ok {
			lo, hasLo = x+1, true
		}
		if x, ok := number(s, "exclusiveMaximum"); ok {
			hi, hasHi = x-1, true
		}
		if !hasLo {
			lo = -1000
		}
		if !hasHi {
			hi = lo + 2000
		}
		if hi < lo {
			hi = lo
		}
		v := lo + g.rng.Float64()*(hi-lo)
		if m, ok := number(s, "multipleOf"); ok && m > 0 {
			v = float64(int64(v/m)) * m
		}
		if t == "integer" || g.chance(0.5) {
			return json.Number(fmt.Sprint(int64(v)))
		}
		return json.Number(fmt.Sprintf("%.3f", v))
	case "string":
		return g.str(s)
	case "array":
		return g.array(s, depth)
	case "object":
		return g.object(s, depth)
	}
	return g.anyValue(depth)
}

// str picks a string that fits the schema's format, pattern and lengths
// from the dictionary, when one does.
func (g *gen) str(s map[string]any) string {
	var re *regexp.Regexp
	if p, ok := s["pattern"].(string); ok {
		re, _ = regexp.Compile(p)
	}
	minL, _ := number(s, "minLength")
	maxL, hasMax := number(s, "maxLength")
	format, _ := s["format"].(string)
	var fits []string
	for _, c := range g.dict.strs {
		n := float64(len([]rune(c)))
		if n < minL || hasMax && n > maxL || re != nil && !re.MatchString(c) {
			continue
		}
		if format != "" && !validFormat(format, c) {
			continue
		}
		fits = append(fits, c)
	}
	if len(fits) == 0 {
		return g.dict.strs[g.pick(len(g.dict.strs))]
	}
	return fits[g.pick(len(fits))]
}

func (g *gen) array(s map[string]any, depth int) any {
	minI, _ := number(s, "minItems")
	maxI, hasMax := number(s, "maxItems")
	n := int(minI) + g.pick(4)
	if g.nodes >= nodeBudget {
		n = int(minI)
	}
	if hasMax && float64(n) > maxI {
		n = int(maxI)
	}
	prefix, _ := s["prefixItems"].([]any)
	out := []any{}
	for i := 0; i < n; i++ {
		var item any = true
		switch {
		case i < len(prefix):
			item = prefix[i]
		case s["items"] != nil:
			item = s["items"]
		}
		if b, ok := item.(bool); ok && !b {
			break
		}
		out = append(out, g.instance(item, depth+1))
	}
	if u, ok := s["uniqueItems"].(bool); ok && u {
		var unique []any
		seen := map[string]bool{}
		for _, it := range out {
			k := string(encode(it))
			if !seen[k] {
				seen[k] = true
				unique = append(unique, it)
			}
		}
		if unique == nil {
			unique = []any{}
		}
		out = unique
	}
	return out
}

func (g *gen) object(s map[string]any, depth int) any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if n, ok := r.(string); ok {
				required[n] = true
			}
		}
	}
	for _, name := range sortedKeys(props) {
		ps := props[name]
		if required[name] || g.nodes < nodeBudget && g.chance(0.5) {
			if b, ok := ps.(bool); ok && !b {
				continue
			}
			out[name] = g.instance(ps, depth+1)
		}
	}
	for _, name := range sortedKeys(required) {
		if _, ok := out[name]; !ok {
			out[name] = g.anyValue(depth + 1)
		}
	}
	if pats, ok := s["patternProperties"].(map[string]any); ok {
		for _, pat := range sortedKeys(pats) {
			ps := pats[pat]
			re, err := regexp.Compile(pat)
			if err != nil || g.nodes >= nodeBudget || !g.chance(0.6) {
				continue
			}
			for _, c := range append(append([]string{}, g.dict.names...), g.dict.strs...) {
				if re.MatchString(c) && c != "" && len(c) < 40 {
					if _, taken := out[c]; !taken {
						out[c] = g.instance(ps, depth+1)
						break
					}
				}
			}
		}
	}
	if addl, ok := s["additionalProperties"]; ok && addl != false && g.nodes < nodeBudget && g.chance(0.3) {
		out["extra"+fmt.Sprint(g.pick(3))] = g.instance(addl, depth+1)
	}
	return out
}

// mutant returns a copy of v changed in one to three places.
func (g *gen) mutant(v any) []byte {
	root := clone(v)
	for n := 1 + g.pick(3); n > 0; n-- {
		var spots []slot
		collectSlots(root, func(x any) { root = x }, &spots)
		spot := spots[g.pick(len(spots))]
		spot.set(g.mutate(spot.value))
	}
	out := encode(root)
	if g.chance(0.2) {
		out = escapeLetters(out, g)
	}
	return out
}

// escapeLetters rewrites some letters inside strings (member names
// included) as \u escapes, which decoders must read as the letters.
func escapeLetters(data []byte, g *gen) []byte {
	var out []byte
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case c == '\\' && inString:
			escaped = true
		case c == '"':
			inString = !inString
		case inString && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && g.chance(0.3):
			out = append(out, fmt.Sprintf("\\u%04x", c)...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// slot is a place in an instance: its value and how to replace it.
type slot struct {
	value any
	set   func(any)
}

func collectSlots(v any, set func(any), out *[]slot) {
	*out = append(*out, slot{value: v, set: set})
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			collectSlots(x[k], func(n any) { x[k] = n }, out)
		}
	case []any:
		for i := range x {
			collectSlots(x[i], func(n any) { x[i] = n }, out)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mutate returns a changed value (maps are changed in place).
func (g *gen) mutate(v any) any {
	switch x := v.(type) {
	case map[string]any:
		switch g.pick(6) {
		case 0: // drop a member
			if k, ok := anyKey(g, x); ok {
				delete(x, k)
				return x
			}
		case 1: // add an undeclared or known member
			name := "undeclared"
			if len(g.dict.names) > 0 && g.chance(0.7) {
				name = g.dict.names[g.pick(len(g.dict.names))]
			}
			x[name] = g.value()
			return x
		case 2: // rename a member to another case
			if k, ok := anyKey(g, x); ok && k != "" {
				val := x[k]
				delete(x, k)
				x[flipCase(k)] = val
				return x
			}
		case 3: // null a member
			if k, ok := anyKey(g, x); ok {
				x[k] = nil
				return x
			}
		}
		return g.value()
	case []any:
		switch g.pick(5) {
		case 0:
			if len(x) > 0 {
				return append(x[:0:0], x[1:]...)
			}
		case 1: // duplicate an item
			if len(x) > 0 {
				return append(x, clone(x[g.pick(len(x))]))
			}
		case 2: // far too many items
			if len(x) > 0 {
				many := make([]any, 0, 300)
				for i := 0; i < 300; i++ {
					many = append(many, clone(x[i%len(x)]))
				}
				return many
			}
		case 3:
			return append(x, g.value())
		}
		return g.value()
	case json.Number:
		f, _ := x.Float64()
		switch g.pick(5) {
		case 0:
			return finite(f+1, x)
		case 1:
			return finite(-f-1, x)
		case 2:
			return finite(f+0.5, x)
		case 3:
			if !strings.ContainsAny(string(x), "eE") {
				return json.Number(string(x) + "e0")
			}
			return json.Number(string(x) + "0")
		default:
			return g.value()
		}
	case string:
		switch g.pick(4) {
		case 0:
			return x + "!"
		case 1:
			return strings.ToUpper(x)
		case 2:
			return g.dict.strs[g.pick(len(g.dict.strs))]
		default:
			return g.value()
		}
	default:
		return g.value()
	}
}

func anyKey(g *gen, m map[string]any) (string, bool) {
	if len(m) == 0 {
		return "", false
	}
	keys := sortedKeys(m)
	return keys[g.pick(len(keys))], true
}

func flipCase(s string) string {
	r := []rune(s)
	for i, c := range r {
		switch {
		case c >= 'a' && c <= 'z':
			r[i] = c - 'a' + 'A'
			return string(r)
		case c >= 'A' && c <= 'Z':
			r[i] = c - 'A' + 'a'
			return string(r)
		}
	}
	return s + "X"
}

func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// validFormat reports whether s is valid for a format as jsonwire checks
// it (through jsonschema/v5's own functions).
func validFormat(format, s string) bool { return jsonwire.IsFormat(format, s) }
