// Package roundtrip checks generated message types against JSON instances:
// the instance is valid for the bundled schema, decodes, and encodes back to
// the same JSON (absent members stay absent, null stays null).
package roundtrip

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Check decodes instance into a T, encodes it again, and fails the test
// unless the result is the same JSON value, and unless T's generated
// encoder (AppendJSON) writes exactly what json.Marshal writes. With contract and message set,
// it first checks the instance against the message's bundled schema.
func Check[T any](t *testing.T, contract *framework.Contract, message string, instance string) *T {
	t.Helper()
	if contract != nil {
		if err := contract.ValidateJSON(message, []byte(instance)); err != nil {
			t.Fatalf("%s: instance is not valid for the schema: %v\n%s", message, err, instance)
		}
	}
	v := new(T)
	if err := json.Unmarshal([]byte(instance), v); err != nil {
		t.Fatalf("%s: decode: %v\n%s", message, err, instance)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: encode: %v", message, err)
	}
	if !SameJSON(t, []byte(instance), out) {
		t.Fatalf("%s: round trip changed the JSON\n in: %s\nout: %s", message, compact(instance), out)
	}
	if _, ok := any(v).(jsonwire.Appender); ok {
		if err := difftest.EncodersAgree(v); err != nil {
			t.Fatalf("%s: the generated encoder differs from encoding/json: %v", message, err)
		}
	}
	return v
}

// SameJSON reports whether two documents hold the same JSON value; numbers
// compare by their text, so 1 and 1.0 differ.
func SameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(decode(t, a), decode(t, b))
}

// Encode marshals v and fails the test unless it is the JSON want.
func Encode(t *testing.T, v any, want string) {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !SameJSON(t, []byte(want), out) {
		t.Fatalf("encoded %s, want %s", out, compact(want))
	}
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return v
}

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}
