package jsonwire_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

type member struct {
	N jsonwire.Nullable[int] `json:"n,omitzero"`
}

func TestNullableKeepsAbsentNullAndValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		// in is the JSON decoded and encoded again.
		in string
		// absent, null, value are the states expected after decoding.
		absent, null, value bool
	}{
		{`{}`, true, false, false},
		{`{"n":null}`, false, true, false},
		{`{"n":0}`, false, false, true},
		{`{"n":7}`, false, false, true},
	}
	for _, tt := range tests {
		var m member
		if err := json.Unmarshal([]byte(tt.in), &m); err != nil {
			t.Fatal(err)
		}
		if m.N.IsZero() != tt.absent || m.N.IsNull() != tt.null || m.N.IsValue() != tt.value {
			t.Errorf("%s: absent=%v null=%v value=%v", tt.in, m.N.IsZero(), m.N.IsNull(), m.N.IsValue())
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != tt.in {
			t.Errorf("%s encoded back as %s", tt.in, out)
		}
	}
	if err := json.Unmarshal([]byte(`{"n":"x"}`), new(member)); err == nil {
		t.Error("a string decoded into Nullable[int]")
	}
}

func TestMarshalWithExtras(t *testing.T) {
	t.Parallel()
	out, err := jsonwire.MarshalWithExtras([]byte(`{"a":1}`), map[string]int{"z": 2, "b": 3}, "a")
	if err != nil || string(out) != `{"a":1,"b":3,"z":2}` {
		t.Errorf("got %s, %v", out, err)
	}
	out, err = jsonwire.MarshalWithExtras([]byte(`{}`), map[string]int{"b": 3})
	if err != nil || string(out) != `{"b":3}` {
		t.Errorf("got %s, %v", out, err)
	}
	if _, err := jsonwire.MarshalWithExtras([]byte(`{"a":1}`), map[string]int{"a": 2}, "a"); err == nil {
		t.Error("an undeclared member named like a declared one encoded")
	}
}

func TestMarshalTuple(t *testing.T) {
	t.Parallel()
	out, err := jsonwire.MarshalTuple(jsonwire.TupleItem{Value: "a", Present: true}, jsonwire.TupleItem{Value: 1, Present: true}, jsonwire.TupleItem{})
	if err != nil || string(out) != `["a",1]` {
		t.Errorf("got %s, %v", out, err)
	}
	if _, err := jsonwire.MarshalTuple(jsonwire.TupleItem{}, jsonwire.TupleItem{Value: 1, Present: true}); err == nil {
		t.Error("a tuple with a hole encoded")
	}
}

func TestFoldKeyAndDiscriminator(t *testing.T) {
	t.Parallel()
	if got := jsonwire.FoldKey("NodeNames", "nodenames", "pod"); got != "nodenames" {
		t.Errorf("FoldKey = %q", got)
	}
	if got := jsonwire.FoldKey("other", "nodenames"); got != "other" {
		t.Errorf("FoldKey = %q", got)
	}
	d := jsonwire.NewDecoder([]byte(`{"Kind":"circle"}`))
	tag, err := d.Discriminator("kind", true)
	if err != nil || tag != "circle" {
		t.Errorf("Discriminator = %q, %v", tag, err)
	}
	d = jsonwire.NewDecoder([]byte(`{"Kind":"circle"}`))
	if _, err := d.Discriminator("kind", false); err == nil {
		t.Error("a differently cased discriminator matched without folding")
	}
}

func ExampleNullable() {
	type patch struct {
		Reason jsonwire.Nullable[string] `json:"reason,omitzero"`
	}
	for _, p := range []patch{{}, {Reason: jsonwire.Null[string]()}, {Reason: jsonwire.Value("")}} {
		b, _ := json.Marshal(p)
		fmt.Println(string(b))
	}
	// Output:
	// {}
	// {"reason":null}
	// {"reason":""}
}
