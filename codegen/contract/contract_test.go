package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// memFiles serves schema files from a map keyed by path relative to /c.
func memFiles(files map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		rel, err := filepath.Rel("/c", p)
		if err != nil {
			return nil, err
		}
		s, ok := files[filepath.ToSlash(rel)]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
}

const header = "contract: demo\nversion: \"1.0.0\"\nserver: srv\nclient: cli\n"

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// contract is the contract file's text (contract.yaml unless it
		// starts with '{').
		contract string
		// files are schema files beside it.
		files map[string]string
		// want are substrings the error must contain, in order of listing.
		want []string
	}{
		{"version is a number", "contract: demo\nversion: 2.0\nserver: srv\nclient: cli\nschemas: {}\n",
			nil, []string{"contract.yaml:2:10", "version must be a string"}},
		{"version not semantic", "contract: demo\nversion: \"two\"\nserver: srv\nclient: cli\nschemas: {}\n",
			nil, []string{"contract.yaml:2:10", "not a semantic version"}},
		{"version number in JSON", `{"contract":"demo","version":1,"server":"srv","client":"cli","schemas":{}}`,
			nil, []string{"contract.json:1:30", "version must be a string"}},
		{"unknown member", header + "method: {}\nschemas: {}\n",
			nil, []string{"contract.yaml:5:9", `unknown contract member "method"`}},
		{"same roles", "contract: demo\nversion: \"1.0.0\"\nserver: a\nclient: a\nschemas: {}\n",
			nil, []string{"server and client are both"}},
		{"maxItems on a unary method", header + "methods:\n  Get: {request: Req, response: Req, maxItems: 10}\nschemas:\n  Req: {type: object}\n",
			nil, []string{"maxItems applies to batch methods only"}},
		{"maxItems not positive", header + "methods:\n  Get: {request: Req, response: Req, batch: true, maxItems: 0}\nschemas:\n  Req: {type: object}\n",
			nil, []string{"maxItems must be a positive integer"}},
		{"unknown message", header + "methods:\n  Get: {request: Req, response: Nope}\nschemas:\n  Req: {type: object}\n",
			nil, []string{"contract.yaml:6:33", `response "Nope" is not an entry of schemas`}},
		{"missing file", header + "schemas:\n  Req: {$ref: missing.json}\n",
			nil, []string{"contract.yaml:6:15", "cannot read referenced schema file missing.json"}},
		{"remote reference", header + "schemas:\n  Req: {$ref: \"https://example.com/x.json\"}\n",
			nil, []string{"remote schemas are not fetched"}},
		{"bad pointer", header + "schemas:\n  Req: {$ref: \"types.json#/$defs/Nope\"}\n",
			map[string]string{"types.json": `{"$defs": {"A": {"type": "string"}}}`},
			[]string{"contract.yaml:6:15", `no member "Nope"`}},
		{"meta-schema violation in a file", header + "schemas:\n  Req: {$ref: types.json}\n",
			map[string]string{"types.json": "{\n  \"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": 5}}\n}"},
			[]string{"types.json:3:32", "at /properties/a/type", "not a valid 2020-12 schema"}},
		{"meta-schema violation in draft-04", header + "schemas:\n  Req: {$ref: d4.json}\n",
			map[string]string{"d4.json": `{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": true}}`},
			[]string{"d4.json:1:76", "not a valid draft-04 schema"}},
		{"lower-case method", header + "methods:\n  requestThing: {request: Req, response: Req}\nschemas:\n  Req: {type: object}\n",
			nil, []string{`method name "requestThing" must be an exported Go name`, `write "RequestThing"`}},
		{"lower-case topic", header + "topics:\n  health: {object: Req, key: id, writer: server, lostWriter: delete}\nschemas:\n  Req: {type: object, required: [id], properties: {id: {type: string}}}\n",
			nil, []string{`topic name "health" must be an exported Go name`, `write "Health"`}},
		{"lower-case message", header + "schemas:\n  req: {type: object}\n",
			nil, []string{`message name "req" must be an exported Go name`, `write "Req"`}},
		{"bad regular expression", header + "schemas:\n  Req: {type: string, pattern: \"(?=x\"}\n",
			nil, []string{"contract.yaml:6:32", "at /schemas/Req/pattern"}},
		{"unknown draft", header + "schemas:\n  Req: {$schema: \"http://example.com/s\"}\n",
			nil, []string{"not a draft jsonschema/v5 knows"}},
		{"dynamic ref", header + "schemas:\n  Req: {$dynamicRef: \"#x\"}\n",
			nil, []string{"$dynamicRef is not supported"}},
		{"topic key missing", header + "topics:\n  Nodes: {object: Req, key: name, writer: server, lostWriter: delete}\nschemas:\n  Req: {type: object, properties: {id: {type: string}}}\n",
			nil, []string{`key "name" is not a property of Req`}},
		{"topic writer", header + "topics:\n  Nodes: {object: Req, key: id, writer: both, lostWriter: delete}\nschemas:\n  Req: {type: object, properties: {id: {type: string}}}\n",
			nil, []string{"writer must be server or client"}},
		{"bad YAML", header + "schemas: [\n", nil, []string{"contract.yaml"}},
		{"contract-relative pointer hint", header + "schemas:\n  Req: {$ref: \"#/$defs/X\"}\n",
			nil, []string{"refer to a message as #/schemas/<Name>"}},
		{"comma in an unquoted flow scalar", header + "schemas:\n  Req: {type: string, description: Names, when cached.}\n",
			nil, []string{"contract.yaml:6:43", `member "when cached." has no value`, "quote the text"}},
		{"duplicate JSON member", `{"contract":"demo","contract":"x"}`, nil, []string{"contract.json:1:20", "duplicate member"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "/c/contract.yaml"
			if strings.HasPrefix(tt.contract, "{") {
				name = "/c/contract.json"
			}
			_, err := Parse(name, []byte(tt.contract), memFiles(tt.files))
			if err == nil {
				t.Fatalf("Parse succeeded; want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *contract.Error", err)
			}
		})
	}
}

// TestBundlesKeepMeaning checks that normalising and bundling schemas of
// every draft changes no verdict: each instance gets the same answer from
// jsonschema/v5 on the original files and on the bundle.
func TestBundlesKeepMeaning(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"d4.json": `{"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://example.com/d4.json",
			"type": "object", "properties": {"n": {"type": "number", "minimum": 1, "exclusiveMinimum": true},
			"m": {"maximum": 5, "exclusiveMaximum": false}, "c": {"const": 1}},
			"dependencies": {"n": ["m"]}}`,
		"d7.json": `{"$schema": "http://json-schema.org/draft-07/schema#",
			"definitions": {"T": {"type": "array", "items": [{"type": "string"}, {"$ref": "#/definitions/N"}],
			"additionalItems": false}, "N": {"$ref": "#/definitions/M", "type": "string"}, "M": {"type": "integer"}}}`,
		"d2019.json": `{"$schema": "https://json-schema.org/draft/2019-09/schema", "$defs": {"A": {"$anchor": "a",
			"type": "array", "items": [{"type": "boolean"}], "additionalItems": {"type": "integer"},
			"dependentRequired": {"x": ["y"]}}}}`,
		"tree.json": `{"type": "object", "properties": {"v": {"type": "integer"},
			"kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["v"]}`,
	}
	contract := header + `schemas:
  D4: {$ref: d4.json}
  Tuple: {$ref: "d7.json#/definitions/T"}
  Anchored: {$ref: "d2019.json#a"}
  Tree: {$ref: tree.json}
  Both:
    type: object
    properties:
      tree: {$ref: tree.json}
      tuple: {$ref: "d7.json#/definitions/T"}
      "odd key/~": {$ref: "#/schemas/Both/$defs/Odd name"}
    $defs:
      "Odd name": {type: string}
`
	c, err := Parse("/c/contract.yaml", []byte(contract), memFiles(files))
	if err != nil {
		t.Fatal(err)
	}
	instances := map[string][]string{
		"D4":       {`{"n": 1}`, `{"n": 1.5, "m": 5}`, `{"m": 5}`, `{"n": 2}`, `{"c": 2}`, `{"m": 6}`},
		"Tuple":    {`["a", 1]`, `["a", "b"]`, `["a", 1, 2]`, `["a"]`, `[]`},
		"Anchored": {`[true, 1, 2]`, `[true, "x"]`, `[1]`, `{"x": 1}`},
		"Tree":     {`{"v": 1, "kids": [{"v": 2}]}`, `{"v": 1, "kids": [{}]}`, `{"kids": []}`},
		"Both": {`{"tree": {"v": 1}, "tuple": ["a", 2], "odd key/~": "s"}`, `{"tree": {"v": "x"}}`,
			`{"tuple": ["a", "b"]}`, `{"odd key/~": 1}`},
	}
	originals := map[string]string{
		"D4": "file:///c/d4.json", "Tuple": "file:///c/d7.json#/definitions/T",
		"Anchored": "file:///c/d2019.json#a", "Tree": "file:///c/tree.json",
	}
	for name, list := range instances {
		bundled := compileForTest(t, c.Message(name).Bundle, nil, "")
		var original *jsonschema.Schema
		if u, ok := originals[name]; ok {
			original = compileForTest(t, nil, files, u)
		}
		for _, inst := range list {
			var v any
			dec := json.NewDecoder(strings.NewReader(inst))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			got := bundled.Validate(v) == nil
			if original != nil {
				if want := original.Validate(v) == nil; got != want {
					t.Errorf("%s %s: bundle says valid=%v, original says %v\nbundle: %s", name, inst, got, want, c.Message(name).Bundle)
				}
			}
		}
	}
	// Both's own verdicts, checked by hand.
	both := compileForTest(t, c.Message("Both").Bundle, nil, "")
	for inst, want := range map[string]bool{
		`{"tree": {"v": 1}, "tuple": ["a", 2], "odd key/~": "s"}`: true,
		`{"tree": {"v": "x"}}`:   false,
		`{"tuple": ["a", "b"]}`:  false,
		`{"odd key/~": 1}`:       false,
		`{"tuple": ["a", 2, 3]}`: false,
	} {
		var v any
		_ = json.Unmarshal([]byte(inst), &v)
		if got := both.Validate(v) == nil; got != want {
			t.Errorf("Both %s: valid=%v, want %v", inst, got, want)
		}
	}
}

// compileForTest compiles either a bundle or, with files, an original URL.
func compileForTest(t *testing.T, bundle []byte, files map[string]string, u string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	if bundle != nil {
		if err := c.AddResource("test:///bundle.json", bytes.NewReader(bundle)); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile("test:///bundle.json")
		if err != nil {
			t.Fatalf("bundle %s: %v", bundle, err)
		}
		return s
	}
	for name, text := range files {
		if err := c.AddResource("file:///c/"+name, strings.NewReader(text)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(u)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHandshakeModel(t *testing.T) {
	t.Parallel()
	contract := header + `forkFrom: ../v0
methods:
  Put: {request: Req, response: Resp, idempotent: true, batch: true, path: /put, maxItems: 500}
topics:
  Items: {object: Req, key: id, writer: client, lostWriter: keep}
schemas:
  Req: {type: object, properties: {id: {type: string}}, x-go-type-note: 1, x-go-name: Request}
  Resp: {type: boolean}
`
	c, err := Parse("/c/contract.yaml", []byte(contract), memFiles(nil))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handshake()
	if h.Name != "demo" || h.Version != "1.0.0" || h.Server != "srv" || h.Client != "cli" || c.ForkFrom != "../v0" {
		t.Errorf("identity: %+v", h)
	}
	if m := h.Methods["Put"]; !m.Idempotent || !m.Batch || m.Path != "/put" || m.Request != "Req" || m.Response != "Resp" || m.MaxItems != 500 {
		t.Errorf("method: %+v", m)
	}
	if tp := h.Topics["Items"]; tp.Key != "id" || tp.Writer != "client" || tp.LostWriter != "keep" || tp.Object != "Req" {
		t.Errorf("topic: %+v", tp)
	}
	want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"id":{"type":"string"}}}`
	if got := string(h.Schemas["Req"]); got != want {
		t.Errorf("bundle of Req:\n got %s\nwant %s", got, want)
	}
	if got := string(h.Schemas["Resp"]); got != `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"boolean"}` {
		t.Errorf("bundle of Resp: %s", got)
	}
}

// TestLocate finds a message's subschemas in its bundle: within its own
// tree, hoisted under $defs, and behind escaped names.
func TestLocate(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"common.json": `{"$defs": {"Money": {"type": "object", "properties": {"amount": {"type": "integer"}}}}}`,
	}
	src := header + `schemas:
  Order:
    type: object
    properties:
      total: {$ref: "common.json#/$defs/Money"}
      "odd/~name": {$ref: "#/schemas/Order/$defs/Line"}
    $defs:
      Line: {type: object, properties: {sku: {type: string}}}
`
	c, err := Parse("/c/contract.yaml", []byte(src), memFiles(files))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Message("Order")
	var bundle any
	if err := json.Unmarshal(m.Bundle, &bundle); err != nil {
		t.Fatal(err)
	}
	props := m.Schema.Get("properties")
	for _, tt := range []struct {
		// schema is a normalised subschema of the message.
		schema *Node
		// want is its pointer in the bundle.
		want string
	}{
		{m.Schema, ""},
		{props.Get("total").Ref, "/$defs/Money"},
		{props.Get("total").Ref.Get("properties").Get("amount"), "/$defs/Money/properties/amount"},
		{props.Get("odd/~name"), "/properties/odd~1~0name"},
		{props.Get("odd/~name").Ref, "/$defs/Line"},
	} {
		got, ok := m.Locate(tt.schema)
		if !ok || got != tt.want {
			t.Errorf("Locate = %q, %v; want %q", got, ok, tt.want)
		}
	}
	if _, ok := m.Locate(&Node{}); ok {
		t.Error("a schema the message does not use was located")
	}
}

// TestSchemaLocations checks that a reference to an absolute URI is read
// from the folder schemaLocations maps its prefix to, keeping the URI as
// the base of the file's own references, and that a URI no prefix covers,
// or one that climbs out of the folder, is still refused.
func TestSchemaLocations(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"copies/common/name.json":  `{"type": "string", "maxLength": 3}`,
		"copies/common/pair.json":  `{"type": "array", "items": {"$ref": "name.json"}}`,
		"outside.json":             `{"type": "integer"}`,
		"copies/other/unused.json": `{}`,
	}
	contract := header + "schemaLocations:\n  \"https://example.com/schemas/\": copies\n" +
		"schemas:\n  Pair: {$ref: \"https://example.com/schemas/common/pair.json\"}\n"
	c, err := Parse("/c/contract.yaml", []byte(contract), memFiles(files))
	if err != nil {
		t.Fatal(err)
	}
	bundle := string(c.Message("Pair").Bundle)
	for _, want := range []string{`"maxLength":3`, `"items":{"$ref":"#/$defs/name"}`} {
		if !strings.Contains(bundle, want) {
			t.Errorf("bundle %s lacks %s", bundle, want)
		}
	}
	for _, ref := range []string{"https://other.example/name.json", "https://example.com/schemas/../outside.json"} {
		src := header + "schemaLocations:\n  \"https://example.com/schemas/\": copies\nschemas:\n  A: {$ref: \"" + ref + "\"}\n"
		if _, err := Parse("/c/contract.yaml", []byte(src), memFiles(files)); err == nil {
			t.Errorf("$ref %s: loaded, want a refusal", ref)
		}
	}
	src := header + "schemaLocations:\n  \"relative/\": copies\nschemas:\n  A: {type: string}\n"
	if _, err := Parse("/c/contract.yaml", []byte(src), memFiles(files)); err == nil || !strings.Contains(err.Error(), "absolute URI ending in /") {
		t.Errorf("a relative prefix: %v, want a refusal", err)
	}
}
