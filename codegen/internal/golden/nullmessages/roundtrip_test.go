package nullmessages

import (
	"encoding/json"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
	"github.com/lockstep-dev/lockstep/framework"
)

// TestNullMessagesDecodeValidateAndEncode checks that a whole message
// that is null, where its schema admits null, decodes, passes the
// generated Validate and encodes back to null; and that the values of its
// one type still do, while values the schema refuses are refused.
func TestNullMessagesDecodeValidateAndEncode(t *testing.T) {
	for _, c := range []struct {
		message string
		new     func() any
		valid   []string
		invalid []string
	}{
		{"MaybeSix", func() any { return new(MaybeSix) }, []string{`null`, `6`}, []string{`7`, `"6"`, `{}`, `false`}},
		{"MaybeObject", func() any { return new(MaybeObject) }, []string{`null`, `{"a": 0}`}, []string{`{}`, `{"a": -1}`, `[]`, `1`}},
		{"MaybeName", func() any { return new(MaybeName) }, []string{`null`, `"ab"`}, []string{`"a"`, `2`}},
		{"OnlyNull", func() any { return new(OnlyNull) }, []string{`null`}, []string{`0`, `""`, `{}`, `[]`, `false`}},
		{"MaybeRef", func() any { return new(MaybeRef) }, []string{`null`, `1`, `2`}, []string{`3`, `"1"`}},
		{"MaybePoint", func() any { return new(MaybePoint) }, []string{`null`, `{"x": 1}`}, []string{`{}`, `{"x": 1, "y": 2}`, `1`}},
		{"MaybeDefined", func() any { return new(MaybeDefined) }, []string{`null`, `{"a": "x"}`}, []string{`{}`, `{"a": 1}`, `1`}},
		{"MaybeList", func() any { return new(MaybeList) }, []string{`null`, `[]`, `["a"]`}, []string{`[1]`, `{}`}},
	} {
		for _, in := range c.valid {
			if err := Contract.ValidateJSON(c.message, []byte(in)); err != nil {
				t.Fatalf("%s %s: not valid for the schema: %v", c.message, in, err)
			}
			v := c.new()
			if err := json.Unmarshal([]byte(in), v); err != nil {
				t.Errorf("%s %s: decode: %v", c.message, in, err)
				continue
			}
			if err := v.(framework.Validator).Validate(); err != nil {
				t.Errorf("%s %s: the generated Validate refuses it: %v", c.message, in, err)
			}
			out, err := json.Marshal(v)
			if err != nil || !roundtrip.SameJSON(t, []byte(in), out) {
				t.Errorf("%s %s: encoded as %s (%v)", c.message, in, out, err)
			}
		}
		for _, in := range c.invalid {
			if Contract.ValidateJSON(c.message, []byte(in)) == nil {
				t.Fatalf("%s %s: valid for the schema", c.message, in)
			}
			v := c.new()
			if err := json.Unmarshal([]byte(in), v); err == nil {
				if err := v.(framework.Validator).Validate(); err == nil {
					t.Errorf("%s %s: decoded and validated, but the schema refuses it", c.message, in)
				}
			}
		}
	}
}

// TestNullAccessors checks IsNull and SetNull, which a nullable union has,
// against the As and From accessors of its one type.
func TestNullAccessors(t *testing.T) {
	var m MaybeSix
	if err := json.Unmarshal([]byte(`null`), &m); err != nil {
		t.Fatal(err)
	}
	if !m.IsNull() {
		t.Errorf("null decoded, IsNull is false (raw %s)", m.Raw())
	}
	if _, err := m.AsInteger(); err == nil {
		t.Error("AsInteger of null succeeded")
	}
	if err := m.FromInteger(MaybeSixIntegerValue6); err != nil {
		t.Fatal(err)
	}
	if m.IsNull() {
		t.Error("IsNull after FromInteger(6)")
	}
	if six, err := m.AsInteger(); err != nil || six != MaybeSixIntegerValue6 {
		t.Errorf("AsInteger = %v, %v; want 6", six, err)
	}
	m.SetNull()
	roundtrip.Encode(t, m, `null`)
	var o MaybeObject
	if o.IsNull() {
		t.Error("a zero MaybeObject, which holds nothing, is null")
	}
	if err := o.Validate(); err == nil {
		t.Error("a zero MaybeObject, which holds nothing, validated")
	}
	roundtrip.Check[MaybeObject](t, Contract, "MaybeObject", `{"a": 3}`)
	roundtrip.Check[OnlyNull](t, Contract, "OnlyNull", `null`)
	if l := roundtrip.Check[MaybeList](t, Contract, "MaybeList", `null`); *l != nil {
		t.Errorf("null decoded as %#v, want a nil slice", *l)
	}
	roundtrip.Check[MaybeList](t, Contract, "MaybeList", `["a"]`)
}
