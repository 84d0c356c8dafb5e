package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-version"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/lockstep-dev/lockstep/handshake"
)

// Contract is one version of a contract, ready for the runtime: the model,
// its fingerprint, and its message schemas compiled for validation. Build it
// with [NewContract]; generated packages build theirs once, at init, with
// [MustContract].
type Contract struct {
	model       handshake.Contract
	fingerprint string
	version     *version.Version
	schemas     map[string]*jsonschema.Schema
	// caseInsensitive marks messages whose schema root says
	// "x-lockstep-case-insensitive": true: peers may send their keys in any
	// case (the Kubernetes scheduler extender sends Go field names), so they
	// are validated after decoding, in their canonical spelling.
	caseInsensitive map[string]bool
	// derivesFrom is the compatible version this one derives from, with
	// the conversions ([NewCompatibleContract]); nil for most contracts.
	derivesFrom *Compatible
}

// NewContract checks a contract model and compiles its schemas with
// jsonschema/v5 (format assertions on). The model is copied.
func NewContract(m handshake.Contract) (*Contract, error) {
	m.Topics = cloneTopics(m.Topics)
	if err := checkModel(&m); err != nil {
		return nil, fmt.Errorf("lockstep: contract %s %s: %w", m.Name, m.Version, err)
	}
	v, err := version.NewVersion(m.Version)
	if err != nil {
		return nil, fmt.Errorf("lockstep: contract %s: version %q: %w", m.Name, m.Version, err)
	}
	fp, err := handshake.Fingerprint(&m)
	if err != nil {
		return nil, fmt.Errorf("lockstep: contract %s %s: fingerprint: %w", m.Name, m.Version, err)
	}
	c := &Contract{model: m, fingerprint: fp, version: v, schemas: make(map[string]*jsonschema.Schema, len(m.Schemas)),
		caseInsensitive: map[string]bool{}}
	for _, name := range sortedKeys(m.Schemas) {
		s, err := compileSchema(m.Name, m.Version, name, m.Schemas[name])
		if err != nil {
			return nil, err
		}
		c.schemas[name] = s
		var root struct {
			CaseInsensitive bool `json:"x-lockstep-case-insensitive"`
		}
		if json.Unmarshal(m.Schemas[name], &root) == nil && root.CaseInsensitive {
			c.caseInsensitive[name] = true
		}
	}
	return c, nil
}

// MustContract is [NewContract] for generated code and package-level
// variables: a contract that does not compile is a build mistake, so it
// panics.
func MustContract(m handshake.Contract) *Contract {
	c, err := NewContract(m)
	if err != nil {
		panic(err)
	}
	return c
}

// Name returns the contract's name.
func (c *Contract) Name() string { return c.model.Name }

// Version returns the contract's version as written in the contract file.
func (c *Contract) Version() string { return c.model.Version }

// Fingerprint returns the contract's fingerprint.
func (c *Contract) Fingerprint() string { return c.fingerprint }

// Server returns the name of the component that serves the contract.
func (c *Contract) Server() string { return c.model.Server }

// Client returns the name of the component that calls the contract.
func (c *Contract) Client() string { return c.model.Client }

// Offer returns the (version, fingerprint) this contract puts in an offer.
func (c *Contract) Offer() handshake.Offer {
	return handshake.Offer{Version: c.model.Version, Fingerprint: c.fingerprint}
}

// Model returns a copy of the contract's model.
func (c *Contract) Model() handshake.Contract {
	m := c.model
	m.Methods = cloneMap(c.model.Methods)
	m.Topics = cloneTopics(c.model.Topics)
	m.Schemas = cloneMap(c.model.Schemas)
	return m
}

// Method returns a method's declaration.
func (c *Contract) Method(name string) (handshake.Method, bool) {
	m, ok := c.model.Methods[name]
	return m, ok
}

// Methods returns the names of the contract's methods, sorted.
func (c *Contract) Methods() []string { return sortedKeys(c.model.Methods) }

// Topic returns a topic's declaration: its object message, key field,
// writer side and lost-writer policy.
func (c *Contract) Topic(name string) (handshake.Topic, bool) {
	t, ok := c.model.Topics[name]
	return t, ok
}

// Topics returns the names of the contract's topics, sorted.
func (c *Contract) Topics() []string { return sortedKeys(c.model.Topics) }

// ValidateJSON validates raw JSON against the named message schema with
// jsonschema/v5. The error, if any, is invalid_argument with the violations
// as details; a message holding a number the validator cannot read
// safely is refused before it ([ErrNumberOutOfRange]).
func (c *Contract) ValidateJSON(message string, raw []byte) error {
	_, err := c.validateJSON(message, raw)
	return err
}

// validateJSON is ValidateJSON, returning the message as the validator
// saw it.
func (c *Contract) validateJSON(message string, raw []byte) (any, error) {
	s, ok := c.schemas[message]
	if !ok {
		return nil, Errorf(CodeInternal, "contract %s %s has no message %q", c.model.Name, c.model.Version, message)
	}
	v, err := decodeAny(raw)
	if err != nil {
		return nil, Errorf(CodeInvalidArgument, "%s is not valid JSON: %v", message, err)
	}
	if err := checkNumbers(message, v); err != nil {
		return nil, err
	}
	return v, validationError(message, s.Validate(v))
}

// maxNumberBytes and maxNumberExponent bound the numbers a message may
// carry into schema validation. jsonschema/v5 reads each number it checks
// against a type or a bound as a big.Rat, ignoring whether it parsed:
// past an exponent of a million big.Rat gives up and the validator
// panics (which, in a multi-call, ended the process), and below that the
// parse takes time growing with the exponent and with the square of the
// digits, so that one number of a peer's choosing cost a core from tens
// of milliseconds to seconds. No value of a contract's Go types comes near
// the bounds: float64 holds 17 significant digits up to 1.8e308, int64
// 19 digits.
const (
	maxNumberBytes    = 256
	maxNumberExponent = 1000
)

// ErrNumberOutOfRange is the cause (errors.Is finds it) of the
// invalid_argument [Contract.ValidateJSON] returns for a message holding
// a number over 256 bytes or with an exponent beyond ±1000, wherever it
// stands. Generated decoders refuse such a number where the schema types
// it (no Go type holds it) and keep it as it is where the schema says
// nothing of it.
var ErrNumberOutOfRange = errors.New("out of range")

// checkNumbers refuses, as invalid_argument, a decoded message holding a
// number over maxNumberBytes or with an exponent beyond
// ±maxNumberExponent.
func checkNumbers(message string, v any) error {
	switch v := v.(type) {
	case json.Number:
		if !numberInRange(string(v)) {
			if len(v) > 32 {
				v = v[:32] + "…"
			}
			return NewError(CodeInvalidArgument, fmt.Errorf("%s: the number %s is %w (at most %d bytes, an exponent within ±%d)",
				message, v, ErrNumberOutOfRange, maxNumberBytes, maxNumberExponent))
		}
	case []any:
		for _, e := range v {
			if err := checkNumbers(message, e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range v {
			if err := checkNumbers(message, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// numberInRange reports whether a JSON number's text is within
// maxNumberBytes and its exponent within ±maxNumberExponent.
func numberInRange(text string) bool {
	if len(text) > maxNumberBytes {
		return false
	}
	i := strings.IndexAny(text, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(text[i+1:])
	return err == nil && exp >= -maxNumberExponent && exp <= maxNumberExponent
}

// decodeValidated decodes raw into v and validates it against the named
// message schema with jsonschema/v5. Case-insensitive messages are decoded
// first and their re-encoded, canonically spelled form validated; others are
// validated as sent, then decoded, each member into the field it spells
// exactly (checkSpelling).
func (c *Contract) decodeValidated(message string, raw []byte, v any) error {
	if c.caseInsensitive[message] {
		if err := json.Unmarshal(raw, v); err != nil {
			return Errorf(CodeInvalidArgument, "%s does not decode: %v", message, err)
		}
		canonical, err := json.Marshal(v)
		if err != nil {
			return Errorf(CodeInvalidArgument, "%s does not re-encode: %v", message, err)
		}
		return c.ValidateJSON(message, canonical)
	}
	validated, err := c.validateJSON(message, raw)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return Errorf(CodeInvalidArgument, "%s does not decode: %v", message, err)
	}
	return checkSpelling(message, validated, v)
}

// checkSpelling refuses, as invalid_argument, a message that decoded into
// v through a member spelled otherwise than its field. encoding/json
// matches members to fields by case folding, the schema validator
// exactly: {"n":1,"N":-5} was validated as n=1 (N an unknown member, which
// the schema may allow) and decoded as n=-5, so a handler saw a value its
// schema forbids. v encoded again names its fields as spelled; a member of
// the validated message missing from it but equal under folding to one of
// its members went into that field. Members of maps keep their spelling,
// so a map's keys never differ so.
func checkSpelling(message string, validated, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return nil // nothing to compare with: v's type does not encode
	}
	decoded, err := decodeAny(b)
	if err != nil {
		return nil
	}
	if at, ok := foldedMember(validated, decoded, ""); ok {
		return Errorf(CodeInvalidArgument, "%s: member %s is not spelled as its field is: members are matched exactly", message, at)
	}
	return nil
}

// foldedMember finds a member of sent, at the path at, that is missing
// from decoded but equal under case folding to a member of decoded's, and
// returns its path.
func foldedMember(sent, decoded any, at string) (string, bool) {
	switch s := sent.(type) {
	case map[string]any:
		d, ok := decoded.(map[string]any)
		if !ok {
			return "", false
		}
		for k, sv := range s {
			if dv, exact := d[k]; exact {
				if p, ok := foldedMember(sv, dv, at+"/"+k); ok {
					return p, true
				}
				continue
			}
			for dk := range d {
				if strings.EqualFold(k, dk) {
					return at + "/" + k, true
				}
			}
		}
	case []any:
		d, ok := decoded.([]any)
		if !ok {
			return "", false
		}
		for i := range min(len(s), len(d)) {
			if p, ok := foldedMember(s[i], d[i], at+"/"+strconv.Itoa(i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

// decodeAny decodes JSON the way jsonschema/v5 expects it: numbers as
// json.Number, so integers keep their precision; trailing data is an error.
func decodeAny(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// validationError turns a jsonschema/v5 failure into invalid_argument with
// one detail per violated keyword.
func validationError(message string, err error) error {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Errorf(CodeInvalidArgument, "%s: %v", message, err)
	}
	type violation struct {
		Instance string `json:"instance"`
		Keyword  string `json:"keyword"`
		Message  string `json:"message"`
	}
	var vs []violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			vs = append(vs, violation{Instance: e.InstanceLocation, Keyword: e.KeywordLocation, Message: e.Message})
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		loc := v.Instance
		if loc == "" {
			loc = "/"
		}
		parts = append(parts, loc+": "+v.Message)
	}
	return Errorf(CodeInvalidArgument, "%s does not match its schema: %s", message, strings.Join(parts, "; ")).
		WithDetails(map[string]any{"violations": vs})
}

// compileSchema compiles one message schema. Its declared $schema is
// honoured; without one it is draft 2020-12.
func compileSchema(contract, ver, name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	comp.AssertFormat = true
	comp.AssertContent = false
	url := fmt.Sprintf("lockstep:///%s/%s/%s.json", contract, ver, name)
	if err := comp.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("lockstep: contract %s %s: schema %s: %w", contract, ver, name, err)
	}
	s, err := comp.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("lockstep: contract %s %s: schema %s: %w", contract, ver, name, err)
	}
	return s, nil
}

// checkModel checks what the runtime relies on: names, roles, and that every
// message a method or topic names has a schema.
func checkModel(m *handshake.Contract) error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, errors.New("contract name is required"))
	}
	if m.Server == "" || m.Client == "" {
		errs = append(errs, errors.New("server and client components are required"))
	}
	if m.Server != "" && m.Server == m.Client {
		errs = append(errs, fmt.Errorf("server and client are both %q", m.Server))
	}
	for _, name := range sortedKeys(m.Methods) {
		meth := m.Methods[name]
		if !validMethodName(name) {
			errs = append(errs, fmt.Errorf("method %q: names are letters and digits, starting with a letter", name))
		}
		for _, msg := range []string{meth.Request, meth.Response} {
			if _, ok := m.Schemas[msg]; !ok {
				errs = append(errs, fmt.Errorf("method %s: message %q has no schema", name, msg))
			}
		}
	}
	for _, name := range sortedKeys(m.Topics) {
		t := m.Topics[name]
		if _, ok := m.Schemas[t.Object]; !ok {
			errs = append(errs, fmt.Errorf("topic %s: object %q has no schema", name, t.Object))
		}
		if t.Writer != handshake.RoleServer && t.Writer != handshake.RoleClient {
			errs = append(errs, fmt.Errorf("topic %s: writer must be server or client, not %q", name, t.Writer))
		}
		if t.LostWriter != handshake.LostWriterDelete && t.LostWriter != handshake.LostWriterKeep {
			errs = append(errs, fmt.Errorf("topic %s: lostWriter must be delete or keep, not %q", name, t.LostWriter))
		}
		if t.Key == "" {
			errs = append(errs, fmt.Errorf("topic %s: key is required", name))
		}
		if err := checkSelectors(t.Selectors); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func validMethodName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		digit := r >= '0' && r <= '9'
		if !letter && !(digit && i > 0) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// cloneTopics copies topic declarations with their selectors, so that no
// caller shares the runtime's.
func cloneTopics(m map[string]handshake.Topic) map[string]handshake.Topic {
	out := cloneMap(m)
	for name, t := range out {
		t.Selectors = slices.Clone(t.Selectors)
		out[name] = t
	}
	return out
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
