package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fuzzFiles are the schema files a fuzzed contract may refer to.
var fuzzFiles = map[string]string{
	"types.json": `{"$defs": {"Name": {"type": "string"}, "List": {"type": "array", "items": {"$ref": "#/$defs/Name"}}}}`,
	"d7.json":    `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"T": {"items": [{"type": "integer"}]}}}`,
	"tree.yaml":  "type: object\nproperties:\n  kids: {type: array, items: {$ref: '#'}}\n",
}

// FuzzParse feeds arbitrary contract files to the parser: it must return a
// contract or an error, never panic or hang, and a contract it returns must
// carry bundles that are valid JSON.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../internal/golden/*/contract.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		header + "schemas:\n  A: {$ref: types.json#/$defs/List}\n  B: {$ref: d7.json#/definitions/T}\n  C: {$ref: tree.yaml}\n",
		header + "methods:\n  M: {request: A, response: A, batch: true}\nschemas:\n  A: {type: [string, 'null']}\n",
		`{"contract":"demo","version":"1.0.0","server":"a","client":"b","schemas":{"A":{"oneOf":[{"$ref":"#/schemas/B"},{"type":"null"}]},"B":true}}`,
		header + "schemas:\n  A: {$ref: '#/schemas/A'}\n",
		header + "schemas: {A: {allOf: [{$ref: '#/schemas/A'}]}}\n",
		"version: 1\n",
		"{",
	} {
		f.Add([]byte(s))
	}
	read := memFiles(fuzzFiles)
	f.Fuzz(func(t *testing.T, data []byte) {
		name := "/c/contract.yaml"
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			name = "/c/contract.json"
		}
		c, err := Parse(name, data, read)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && !strings.Contains(err.Error(), "yaml") {
				t.Fatalf("error %T without a position: %v", err, err)
			}
			return
		}
		for _, m := range c.Messages {
			if !json.Valid(m.Bundle) {
				t.Fatalf("bundle of %s is not JSON: %s", m.Name, m.Bundle)
			}
		}
	})
}

// FuzzParseJSON checks the positional JSON reader against encoding/json:
// whatever it accepts is valid JSON with the same value, and valid JSON it
// refuses has duplicate member names.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1, 2.5e3, -0, "a\u00e9\n", true, null]`, `{"a": {"b": [{}]}}`, `{"a":1,"a":2}`, `"\ud83d\ude00"`, `01`, `[1,]`, " \t\n{\"x\" : [ ] }\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseJSON(data)
		valid := json.Valid(data)
		if err != nil {
			if valid && !strings.Contains(err.Error(), "duplicate member") && !strings.Contains(err.Error(), "nesting deeper") {
				t.Fatalf("refused valid JSON %q: %v", data, err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := n.Interface(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q read as %#v, encoding/json reads %#v", data, got, want)
		}
	})
}
