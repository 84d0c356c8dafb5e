// Package schema validates a contract's messages against their JSON
// Schemas (jsonschema/v5, format assertions on), with the runtime's
// guards around the validator: numbers it cannot read safely are refused
// before it, and a member spelled otherwise than the field it decoded
// into is refused after decoding. It is separate because it is one rule
// with its own dependency: the root's [framework.Contract] holds one
// compiled [Message] per message and asks it, and nothing here knows of
// servers, clients or sessions.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// Message is one message's schema, compiled.
type Message struct {
	name   string
	schema *jsonschema.Schema
	// caseInsensitive is set when the schema root says
	// "x-lockstep-case-insensitive": true: peers may send their keys in
	// any case (the Kubernetes scheduler extender sends Go field names),
	// so the message is validated after decoding, in its canonical
	// spelling.
	caseInsensitive bool
}

// Compile compiles message name's schema raw of a contract version. Its
// declared $schema is honoured; without one it is draft 2020-12.
func Compile(contract, ver, name string, raw json.RawMessage) (*Message, error) {
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
	m := &Message{name: name, schema: s}
	var root struct {
		CaseInsensitive bool `json:"x-lockstep-case-insensitive"`
	}
	if json.Unmarshal(raw, &root) == nil && root.CaseInsensitive {
		m.caseInsensitive = true
	}
	return m, nil
}

// Validate validates raw JSON against the schema and returns the message
// as the validator saw it. The error, if any, is invalid_argument with the
// violations as details; a message holding a number the validator cannot
// read safely is refused before it ([ErrNumberOutOfRange]).
func (m *Message) Validate(raw []byte) (any, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return nil, apierror.Errorf(apierror.CodeInvalidArgument, "%s is not valid JSON: %v", m.name, err)
	}
	if err := checkNumbers(m.name, v); err != nil {
		return nil, err
	}
	return v, validationError(m.name, m.schema.Validate(v))
}

// DecodeValidated decodes raw into v and validates it against the schema.
// Case-insensitive messages are decoded first and their re-encoded,
// canonically spelled form validated; others are validated as sent, then
// decoded, each member into the field it spells exactly (checkSpelling).
func (m *Message) DecodeValidated(raw []byte, v any) error {
	if m.caseInsensitive {
		if err := json.Unmarshal(raw, v); err != nil {
			return apierror.Errorf(apierror.CodeInvalidArgument, "%s does not decode: %v", m.name, err)
		}
		canonical, err := json.Marshal(v)
		if err != nil {
			return apierror.Errorf(apierror.CodeInvalidArgument, "%s does not re-encode: %v", m.name, err)
		}
		_, err = m.Validate(canonical)
		return err
	}
	validated, err := m.Validate(raw)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return apierror.Errorf(apierror.CodeInvalidArgument, "%s does not decode: %v", m.name, err)
	}
	return checkSpelling(m.name, validated, v)
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
// invalid_argument [Message.Validate] returns for a message holding a
// number over 256 bytes or with an exponent beyond ±1000, wherever it
// stands; framework.ErrNumberOutOfRange is this value.
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
			return apierror.NewError(apierror.CodeInvalidArgument, fmt.Errorf("%s: the number %s is %w (at most %d bytes, an exponent within ±%d)",
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
		return apierror.Errorf(apierror.CodeInvalidArgument, "%s: member %s is not spelled as its field is: members are matched exactly", message, at)
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
		return apierror.Errorf(apierror.CodeInvalidArgument, "%s: %v", message, err)
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
	return apierror.Errorf(apierror.CodeInvalidArgument, "%s does not match its schema: %s", message, strings.Join(parts, "; ")).
		WithDetails(map[string]any{"violations": vs})
}
