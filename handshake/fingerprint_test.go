package handshake_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/lockstep-dev/lockstep/handshake"
)

var update = flag.Bool("update", false, "rewrite the expected fingerprints and canonical forms in testdata/fingerprint")

const (
	goldenDir          = "testdata/fingerprint"
	goldenFingerprints = "testdata/fingerprint/fingerprints.txt"
)

// loadContract reads a contract file of testdata/fingerprint. Schemas stay
// exactly as written, whitespace and annotations included.
func loadContract(t testing.TB, path string) *handshake.Contract {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c handshake.Contract
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &c
}

// readFingerprints parses fingerprints.txt: one "<contract file> <fingerprint>"
// a line.
func readFingerprints(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(goldenFingerprints)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, fp, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: malformed line %q", goldenFingerprints, line)
		}
		want[file] = strings.TrimSpace(fp)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestFingerprintGolden pins the fingerprint and canonical form of every
// contract in testdata/fingerprint. A failure here means the canonical form
// changed: that is a new algorithm and needs a new FingerprintPrefix, not an
// -update.
func TestFingerprintGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d golden contracts, want at least 4", len(files))
	}
	sort.Strings(files)
	got := map[string]string{}
	for _, path := range files {
		name := filepath.Base(path)
		c := loadContract(t, path)
		canonical, err := handshake.Canonical(c)
		if err != nil {
			t.Fatalf("%s: Canonical: %v", name, err)
		}
		fp, err := handshake.Fingerprint(c)
		if err != nil {
			t.Fatalf("%s: Fingerprint: %v", name, err)
		}
		sum := sha256.Sum256(canonical)
		if want := "lsfp1:" + hex.EncodeToString(sum[:]); fp != want {
			t.Errorf("%s: Fingerprint = %s, want lsfp1 + sha256(Canonical) = %s", name, fp, want)
		}
		got[name] = fp
		canonicalPath := strings.TrimSuffix(path, ".json") + ".canonical"
		if *update {
			if err := os.WriteFile(canonicalPath, canonical, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		wantCanonical, err := os.ReadFile(canonicalPath)
		if err != nil {
			t.Fatalf("%s: %v (run go test -run TestFingerprintGolden -update to create it)", name, err)
		}
		if !bytes.Equal(canonical, wantCanonical) {
			t.Errorf("%s: canonical form changed\n got: %s\nwant: %s", name, canonical, wantCanonical)
		}
	}
	if *update {
		var b strings.Builder
		b.WriteString("# Expected lsfp1 fingerprints of the contracts beside this file.\n")
		b.WriteString("# A change here is a change of the fingerprint algorithm: it needs a new prefix.\n")
		for _, path := range files {
			name := filepath.Base(path)
			fmt.Fprintf(&b, "%s %s\n", name, got[name])
		}
		if err := os.WriteFile(goldenFingerprints, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readFingerprints(t)
	for name, fp := range got {
		if want[name] != fp {
			t.Errorf("%s: fingerprint = %s, want %s", name, fp, want[name])
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("fingerprints.txt names %s, which has no contract file", name)
		}
	}
}

// TestBenchFingerprint pins the benchmark contract's fingerprint on its own,
// since benchmarks and other suites quote it.
func TestBenchFingerprint(t *testing.T) {
	c := loadContract(t, filepath.Join(goldenDir, "bench.json"))
	fp, err := handshake.Fingerprint(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := readFingerprints(t)["bench.json"]; fp != want {
		t.Errorf("bench fingerprint = %s, want %s", fp, want)
	}
	if c.Name != "bench" || c.Version != "1.0.0" || c.Server != "nodecontroller" || c.Client != "kubelet" {
		t.Errorf("bench contract header = %s %s %s %s", c.Name, c.Version, c.Server, c.Client)
	}
	for _, file := range []string{"nodestatus.schema.json", "ack.schema.json"} {
		shared := filepath.Join("..", "..", "shared", "bench", file)
		if _, err := os.Stat(shared); err != nil {
			continue // the shared folder is not part of every checkout
		}
		raw, err := os.ReadFile(shared)
		if err != nil {
			t.Fatal(err)
		}
		name := map[string]string{"nodestatus.schema.json": "NodeStatus", "ack.schema.json": "Ack"}[file]
		if !sameJSON(t, raw, c.Schemas[name]) {
			t.Errorf("bench.json's %s differs from %s", name, shared)
		}
	}
}

// sameJSON reports whether two documents are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	ca, err := jcs.Transform(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ca, cb)
}

// TestCanonicalLiteral spells out whole canonical documents, so the form
// documented on Canonical is checked byte for byte.
func TestCanonicalLiteral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string              // what the case shows
		c    *handshake.Contract // the contract
		want string              // its canonical form
	}{{
		name: "empty maps are present",
		c:    &handshake.Contract{Name: "ping", Version: "0.1.0", Server: "pinger", Client: "ponger"},
		want: `{"client":"ponger","contract":"ping","methods":{},"schemas":{},"server":"pinger","topics":{},"version":"0.1.0"}`,
	}, {
		name: "every field of methods and topics",
		c: &handshake.Contract{
			Name: "c", Version: "1.0", Server: "nodecontroller", Client: "kubelet",
			Methods: map[string]handshake.Method{"M": {Request: "S", Response: "S"}},
			Topics:  map[string]handshake.Topic{"T": {Object: "S", Key: "k", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete}},
			Schemas: map[string]json.RawMessage{"S": json.RawMessage(" {\"type\" : \"string\", \"title\": \"x\"}\n")},
		},
		want: `{"client":"kubelet","contract":"c","methods":{"M":{"batch":false,"idempotent":false,"path":"","request":"S","response":"S"}},` +
			`"schemas":{"S":{"type":"string"}},"server":"nodecontroller",` +
			`"topics":{"T":{"key":"k","lostWriter":"delete","object":"S","writer":"server"}},"version":"1.0"}`,
	}, {
		name: "flags, paths, boolean schemas, numbers and strings in RFC 8785 form",
		c: &handshake.Contract{
			Name: "c", Version: "1.0.0", Server: "a", Client: "b",
			Methods: map[string]handshake.Method{"Get": {Request: "In", Response: "Out", Idempotent: true, Batch: true, Path: "/x?y=<z>&w"}},
			Schemas: map[string]json.RawMessage{
				"In":  json.RawMessage(`false`),
				"Out": json.RawMessage(`{"maximum": 1.50E+3, "minimum": -0, "multipleOf": 1e-7, "const": "\u00e9\u2028\ud83d\ude00\/", "enum": [100000000000000000000000]}`),
			},
		},
		want: `{"client":"b","contract":"c","methods":{"Get":{"batch":true,"idempotent":true,"path":"/x?y=<z>&w","request":"In","response":"Out"}},` +
			`"schemas":{"In":false,"Out":{"const":"é` + "\u2028" + `😀/","enum":[1e+23],"maximum":1500,"minimum":0,"multipleOf":1e-7}},` +
			`"server":"a","topics":{},"version":"1.0.0"}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := handshake.Canonical(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonical =\n%s\nwant\n%s", got, tt.want)
			}
			fp, err := handshake.Fingerprint(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(tt.want))
			if want := handshake.FingerprintPrefix + hex.EncodeToString(sum[:]); fp != want {
				t.Errorf("Fingerprint = %s, want %s", fp, want)
			}
		})
	}
}

// canonicalSchema returns the canonical form of one schema, as Canonical
// puts it into a contract.
func canonicalSchema(t *testing.T, schema string) string {
	t.Helper()
	c := &handshake.Contract{Name: "c", Version: "1.0.0", Server: "a", Client: "b",
		Schemas: map[string]json.RawMessage{"S": json.RawMessage(schema)}}
	canonical, err := handshake.Canonical(c)
	if err != nil {
		t.Fatalf("Canonical(%s): %v", schema, err)
	}
	var doc struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	}
	if err := json.Unmarshal(canonical, &doc); err != nil {
		t.Fatal(err)
	}
	return string(doc.Schemas["S"])
}

// TestCanonicalAnnotations checks annotation removal keyword by keyword: what
// is dropped, where it recurses, and what it never touches.
func TestCanonicalAnnotations(t *testing.T) {
	t.Parallel()
	const ann = `"title":"t","description":"d","examples":[1],"$comment":"c"`
	tests := []struct {
		name   string // what the case shows
		schema string // the schema as written
		want   string // the schema in the canonical form
	}{
		{"top-level annotations", `{` + ann + `,"type":"string"}`, `{"type":"string"}`},
		{"annotations of any type", `{"title":{"a":1},"description":null,"examples":"x","$comment":7}`, `{}`},
		{"boolean true", `true`, `true`},
		{"boolean false", `false`, `false`},
		{"properties", `{"properties":{"a":{` + ann + `}}}`, `{"properties":{"a":{}}}`},
		{"a property named description stays", `{"properties":{"description":{"type":"string","description":"d"}}}`, `{"properties":{"description":{"type":"string"}}}`},
		{"properties named after every annotation stay", `{"properties":{"title":true,"description":false,"examples":{},"$comment":{"title":"x"}}}`,
			`{"properties":{"$comment":{},"description":false,"examples":{},"title":true}}`},
		{"patternProperties", `{"patternProperties":{"^a":{` + ann + `}}}`, `{"patternProperties":{"^a":{}}}`},
		{"$defs", `{"$defs":{"A":{` + ann + `,"type":"null"}}}`, `{"$defs":{"A":{"type":"null"}}}`},
		{"definitions", `{"definitions":{"A":{` + ann + `}}}`, `{"definitions":{"A":{}}}`},
		{"dependentSchemas", `{"dependentSchemas":{"a":{` + ann + `}}}`, `{"dependentSchemas":{"a":{}}}`},
		{"dependencies schema and names", `{"dependencies":{"a":{` + ann + `},"b":["title","description"]}}`, `{"dependencies":{"a":{},"b":["title","description"]}}`},
		{"dependentRequired is not a schema", `{"dependentRequired":{"a":["title"]}}`, `{"dependentRequired":{"a":["title"]}}`},
		{"items schema", `{"items":{` + ann + `}}`, `{"items":{}}`},
		{"items array", `{"items":[{` + ann + `},true]}`, `{"items":[{},true]}`},
		{"prefixItems", `{"prefixItems":[{` + ann + `}]}`, `{"prefixItems":[{}]}`},
		{"allOf", `{"allOf":[{` + ann + `}]}`, `{"allOf":[{}]}`},
		{"anyOf", `{"anyOf":[{` + ann + `},false]}`, `{"anyOf":[{},false]}`},
		{"oneOf", `{"oneOf":[{` + ann + `}]}`, `{"oneOf":[{}]}`},
		{"not", `{"not":{` + ann + `}}`, `{"not":{}}`},
		{"if then else", `{"if":{` + ann + `},"then":{` + ann + `},"else":{` + ann + `}}`, `{"else":{},"if":{},"then":{}}`},
		{"additionalProperties", `{"additionalProperties":{` + ann + `}}`, `{"additionalProperties":{}}`},
		{"additionalItems", `{"additionalItems":{` + ann + `}}`, `{"additionalItems":{}}`},
		{"contains", `{"contains":{` + ann + `}}`, `{"contains":{}}`},
		{"propertyNames", `{"propertyNames":{` + ann + `}}`, `{"propertyNames":{}}`},
		{"unevaluatedItems", `{"unevaluatedItems":{` + ann + `}}`, `{"unevaluatedItems":{}}`},
		{"unevaluatedProperties", `{"unevaluatedProperties":{` + ann + `}}`, `{"unevaluatedProperties":{}}`},
		{"contentSchema", `{"contentSchema":{` + ann + `}}`, `{"contentSchema":{}}`},
		{"deep nesting", `{"properties":{"a":{"items":{"allOf":[{"$defs":{"B":{"not":{"title":"x","type":"string"}}}}]}}}}`,
			`{"properties":{"a":{"items":{"allOf":[{"$defs":{"B":{"not":{"type":"string"}}}}]}}}}`},
		{"enum values are data", `{"enum":[{"title":"x","description":"y"}]}`, `{"enum":[{"description":"y","title":"x"}]}`},
		{"const value is data", `{"const":{"$comment":"x"}}`, `{"const":{"$comment":"x"}}`},
		{"default value is data", `{"default":{"examples":[1]}}`, `{"default":{"examples":[1]}}`},
		{"required names stay", `{"required":["title","description"]}`, `{"required":["title","description"]}`},
		{"unknown keywords are kept whole", `{"x-doc":{"title":"x","properties":{"a":{"title":"y"}}}}`, `{"x-doc":{"properties":{"a":{"title":"y"}},"title":"x"}}`},
		{"annotations inside examples are not searched", `{"examples":[{"title":"x"}],"type":"object"}`, `{"type":"object"}`},
		{"non-schema values in schema places are kept", `{"properties":[{"title":"x"}],"not":"title","items":7,"allOf":{"title":"x"}}`,
			`{"allOf":{"title":"x"},"items":7,"not":"title","properties":[{"title":"x"}]}`},
		{"$ref siblings", `{"$ref":"#/$defs/A","description":"why","$defs":{"A":{"type":"integer"}}}`, `{"$defs":{"A":{"type":"integer"}},"$ref":"#/$defs/A"}`},
		{"keyword-like names inside enum of properties", `{"properties":{"enum":{"title":"x"}}}`, `{"properties":{"enum":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := jcs.Transform([]byte(tt.want))
			if err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if got := canonicalSchema(t, tt.schema); got != string(want) {
				t.Errorf("schema %s\n got %s\nwant %s", tt.schema, got, want)
			}
		})
	}
}

// TestCanonicalErrors checks that every contract Canonical cannot hash is an
// error that names the culprit.
func TestCanonicalErrors(t *testing.T) {
	t.Parallel()
	withSchema := func(raw string) *handshake.Contract {
		return &handshake.Contract{Name: "c", Version: "1.0.0", Server: "a", Client: "b",
			Schemas: map[string]json.RawMessage{"Good": json.RawMessage(`true`), "Broken": json.RawMessage(raw)}}
	}
	tests := []struct {
		name string              // what is wrong
		c    *handshake.Contract // the contract
		want []string            // substrings of the error
	}{
		{"nil contract", nil, []string{"nil contract"}},
		{"truncated schema", withSchema(`{"type":`), []string{`schema "Broken"`, "not valid JSON"}},
		{"empty schema", withSchema(``), []string{`schema "Broken"`, "not valid JSON", "unexpected end"}},
		{"trailing garbage", withSchema(`{} {}`), []string{`schema "Broken"`, "not valid JSON"}},
		{"duplicate keys", withSchema(`{"type":"string","type":"integer"}`), []string{`schema "Broken"`, "Duplicate key"}},
		{"number beyond a double", withSchema(`{"maximum":1e400}`), []string{`schema "Broken"`, "out of range"}},
		{"invalid UTF-8 in a string", withSchema("{\"pattern\":\"\xff\"}"), []string{`schema "Broken"`, "UTF-8"}},
		{"lone surrogate", withSchema(`{"const":"\udc00"}`), []string{`schema "Broken"`, "surrogate"}},
		{"a number is not a schema", withSchema(`42`), []string{`schema "Broken"`, "object or a boolean"}},
		{"null is not a schema", withSchema(`null`), []string{`schema "Broken"`, "object or a boolean"}},
		{"an array is not a schema", withSchema(`[{}]`), []string{`schema "Broken"`, "object or a boolean"}},
		{"a string is not a schema", withSchema(`"string"`), []string{`schema "Broken"`, "object or a boolean"}},
		{"invalid UTF-8 in a method name", &handshake.Contract{Methods: map[string]handshake.Method{"Get\xff": {}}}, []string{"method name", "UTF-8"}},
		{"invalid UTF-8 in a version", &handshake.Contract{Version: "1.0\xff"}, []string{"version", "UTF-8"}},
		{"invalid UTF-8 in a topic key", &handshake.Contract{Topics: map[string]handshake.Topic{"T": {Key: "k\xfe"}}}, []string{"topic T key", "UTF-8"}},
		{"invalid UTF-8 in a schema name", &handshake.Contract{Schemas: map[string]json.RawMessage{"S\xc0": json.RawMessage(`true`)}}, []string{"schema name", "UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := handshake.Canonical(tt.c)
			if err == nil {
				t.Fatal("Canonical succeeded, want an error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if _, fpErr := handshake.Fingerprint(tt.c); fpErr == nil || fpErr.Error() != err.Error() {
				t.Errorf("Fingerprint error = %v, want %v", fpErr, err)
			}
		})
	}
}

// TestContractOffer checks that a contract offers its own version with its
// fingerprint.
func TestContractOffer(t *testing.T) {
	t.Parallel()
	c := loadContract(t, filepath.Join(goldenDir, "bench.json"))
	offer, err := c.Offer()
	if err != nil {
		t.Fatal(err)
	}
	fp, err := handshake.Fingerprint(c)
	if err != nil {
		t.Fatal(err)
	}
	if offer != (handshake.Offer{Version: "1.0.0", Fingerprint: fp}) {
		t.Errorf("Offer = %+v, want version 1.0.0 with %s", offer, fp)
	}
	if err := handshake.ValidateOffers([]handshake.Offer{offer}); err != nil {
		t.Errorf("a contract's own offer does not validate: %v", err)
	}
	broken := &handshake.Contract{Schemas: map[string]json.RawMessage{"S": json.RawMessage(`{`)}}
	if _, err := broken.Offer(); err == nil {
		t.Error("Offer of a contract with a broken schema succeeded")
	}
}

// --- property tests ---

// cloneContract deep-copies a contract so a test can change it.
func cloneContract(c *handshake.Contract) *handshake.Contract {
	out := *c
	out.Methods = map[string]handshake.Method{}
	for k, v := range c.Methods {
		out.Methods[k] = v
	}
	out.Topics = map[string]handshake.Topic{}
	for k, v := range c.Topics {
		out.Topics[k] = v
	}
	out.Schemas = map[string]json.RawMessage{}
	for k, v := range c.Schemas {
		out.Schemas[k] = append(json.RawMessage(nil), v...)
	}
	return &out
}

// decodeJSON decodes a document keeping numbers as written.
func decodeJSON(t testing.TB, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// rewriter writes a schema back as different but equivalent text: members in
// random order, random whitespace, integers sometimes as 1.0 or 1e0, and,
// at every place a schema sits, annotations added or replaced. It knows the
// schema keywords on its own, independently of the code under test.
type rewriter struct {
	rng      *rand.Rand
	annotate bool
}

var (
	testMapKeywords    = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	testArrayKeywords  = []string{"prefixItems", "allOf", "anyOf", "oneOf", "items"}
	testSingleKeywords = []string{"not", "if", "then", "else", "additionalProperties", "additionalItems", "contains",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items"}
)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *rewriter) space() string {
	return []string{"", "", " ", "\n", "\t", "\r\n  "}[r.rng.IntN(6)]
}

// write renders v; isSchema says whether a schema sits here.
func (r *rewriter) write(b *strings.Builder, v any, isSchema bool) {
	b.WriteString(r.space())
	switch v := v.(type) {
	case map[string]any:
		members := map[string]any{}
		for k, x := range v {
			members[k] = x
		}
		if isSchema && r.annotate {
			annotations := []any{"Title ☃", "a \"description\"\n", []any{map[string]any{"type": "wire?"}}, map[string]any{"$comment": 1}}
			for _, k := range []string{"title", "description", "examples", "$comment"} {
				if r.rng.IntN(2) == 0 {
					members[k] = annotations[r.rng.IntN(len(annotations))]
				}
			}
		}
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		r.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(r.space())
			name, _ := json.Marshal(k)
			b.Write(name)
			b.WriteString(r.space() + ":")
			x := members[k]
			switch {
			case !isSchema:
				r.write(b, x, false)
			case contains(testMapKeywords, k):
				r.writeMembers(b, x, k == "dependencies")
			case contains(testArrayKeywords, k) && isArray(x):
				r.writeElements(b, x)
			case contains(testSingleKeywords, k):
				r.write(b, x, true)
			default:
				r.write(b, x, false)
			}
		}
		b.WriteString(r.space() + "}")
	case []any:
		r.writeElements2(b, v, false)
	case json.Number:
		s := v.String()
		if !strings.ContainsAny(s, ".eE") && r.rng.IntN(3) == 0 {
			if r.rng.IntN(2) == 0 {
				s += ".0"
			} else {
				s += "e0"
			}
		}
		b.WriteString(s)
	default:
		out, _ := json.Marshal(v)
		b.Write(out)
	}
	b.WriteString(r.space())
}

func isArray(v any) bool { _, ok := v.([]any); return ok }

func (r *rewriter) writeMembers(b *strings.Builder, v any, namesAllowed bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		r.write(b, v, false)
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	r.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	b.WriteString(r.space() + "{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		name, _ := json.Marshal(k)
		b.Write(name)
		b.WriteString(":")
		r.write(b, obj[k], !(namesAllowed && isArray(obj[k])))
	}
	b.WriteString("}" + r.space())
}

func (r *rewriter) writeElements(b *strings.Builder, v any) {
	r.writeElements2(b, v.([]any), true)
}

func (r *rewriter) writeElements2(b *strings.Builder, arr []any, schemas bool) {
	b.WriteString(r.space() + "[")
	for i, x := range arr {
		if i > 0 {
			b.WriteString(",")
		}
		r.write(b, x, schemas)
	}
	b.WriteString("]" + r.space())
}

// rewrite returns the contract with every schema rewritten by r.
func (r *rewriter) rewrite(t testing.TB, c *handshake.Contract) *handshake.Contract {
	out := cloneContract(c)
	for name, raw := range c.Schemas {
		var b strings.Builder
		r.write(&b, decodeJSON(t, raw), true)
		out.Schemas[name] = json.RawMessage(b.String())
	}
	return out
}

func mustFingerprint(t testing.TB, c *handshake.Contract) string {
	t.Helper()
	fp, err := handshake.Fingerprint(c)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// TestFingerprintIgnoresPresentation checks, on every golden contract, that
// annotations, member order, whitespace and number spelling never change the
// fingerprint.
func TestFingerprintIgnoresPresentation(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	annotated := 0
	for _, path := range files {
		c := loadContract(t, path)
		want := mustFingerprint(t, c)
		for seed := range uint64(50) {
			r := &rewriter{rng: rand.New(rand.NewPCG(seed, 0x15f)), annotate: seed%5 != 0}
			variant := r.rewrite(t, c)
			for _, raw := range variant.Schemas {
				if bytes.Contains(raw, []byte("Title ☃")) {
					annotated++
				}
			}
			if got := mustFingerprint(t, variant); got != want {
				for name, raw := range variant.Schemas {
					t.Logf("%s: %s", name, raw)
				}
				t.Fatalf("%s, seed %d: fingerprint %s, want %s", filepath.Base(path), seed, got, want)
			}
		}
	}
	if annotated < 100 {
		t.Errorf("only %d rewritten schemas carried added annotations; the rewriter is not exercising anything", annotated)
	}
}

// editSchema changes one schema of c through its decoded form.
func editSchema(t testing.TB, c *handshake.Contract, name string, edit func(schema map[string]any)) {
	t.Helper()
	schema, ok := decodeJSON(t, c.Schemas[name]).(map[string]any)
	if !ok {
		t.Fatalf("schema %s is not an object", name)
	}
	edit(schema)
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	c.Schemas[name] = raw
}

// at walks decoded JSON by member names.
func at(v any, path ...string) map[string]any {
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	return v.(map[string]any)
}

// TestFingerprintSeesWireChanges checks that every change to what travels on
// the wire, or to how it is routed, changes the fingerprint, and that no two
// of these changes collide.
func TestFingerprintSeesWireChanges(t *testing.T) {
	t.Parallel()
	base := loadContract(t, filepath.Join(goldenDir, "nodestatus-v2.json"))
	tests := []struct {
		name   string                                    // the change
		change func(t testing.TB, c *handshake.Contract) // applies it
	}{
		{"version bumped", func(t testing.TB, c *handshake.Contract) { c.Version = "2.0.1" }},
		{"version spelled differently", func(t testing.TB, c *handshake.Contract) { c.Version = "2.0" }},
		{"contract renamed", func(t testing.TB, c *handshake.Contract) { c.Name = "nodestatus2" }},
		{"server changed", func(t testing.TB, c *handshake.Contract) { c.Server = "scheduler" }},
		{"client changed", func(t testing.TB, c *handshake.Contract) { c.Client = "scheduler" }},
		{"roles swapped", func(t testing.TB, c *handshake.Contract) { c.Server, c.Client = c.Client, c.Server }},
		{"method made not idempotent", func(t testing.TB, c *handshake.Contract) {
			m := c.Methods["ReportStatus"]
			m.Idempotent = false
			c.Methods["ReportStatus"] = m
		}},
		{"method made batch", func(t testing.TB, c *handshake.Contract) {
			m := c.Methods["ReportStatus"]
			m.Batch = true
			c.Methods["ReportStatus"] = m
		}},
		{"method given a path", func(t testing.TB, c *handshake.Contract) {
			m := c.Methods["ReportStatus"]
			m.Path = "/status"
			c.Methods["ReportStatus"] = m
		}},
		{"method request changed", func(t testing.TB, c *handshake.Contract) {
			m := c.Methods["ReportStatus"]
			m.Request = "PodStatus"
			c.Methods["ReportStatus"] = m
		}},
		{"method response changed", func(t testing.TB, c *handshake.Contract) {
			m := c.Methods["ReportStatus"]
			m.Response = "NodeHealth"
			c.Methods["ReportStatus"] = m
		}},
		{"method renamed", func(t testing.TB, c *handshake.Contract) {
			c.Methods["ReportNodeStatus"] = c.Methods["ReportStatus"]
			delete(c.Methods, "ReportStatus")
		}},
		{"method removed", func(t testing.TB, c *handshake.Contract) { delete(c.Methods, "ReportPodStatuses") }},
		{"method added", func(t testing.TB, c *handshake.Contract) {
			c.Methods["Ping"] = handshake.Method{Request: "Ack", Response: "Ack"}
		}},
		{"topic policy changed", func(t testing.TB, c *handshake.Contract) {
			tp := c.Topics["NodeHealth"]
			tp.LostWriter = handshake.LostWriterDelete
			c.Topics["NodeHealth"] = tp
		}},
		{"topic writer changed", func(t testing.TB, c *handshake.Contract) {
			tp := c.Topics["NodeHealth"]
			tp.Writer = handshake.RoleClient
			c.Topics["NodeHealth"] = tp
		}},
		{"topic key changed", func(t testing.TB, c *handshake.Contract) {
			tp := c.Topics["NodeHealth"]
			tp.Key = "name"
			c.Topics["NodeHealth"] = tp
		}},
		{"topic object changed", func(t testing.TB, c *handshake.Contract) {
			tp := c.Topics["Lease"]
			tp.Object = "Ack"
			c.Topics["Lease"] = tp
		}},
		{"topic removed", func(t testing.TB, c *handshake.Contract) { delete(c.Topics, "Lease") }},
		{"schema renamed", func(t testing.TB, c *handshake.Contract) {
			c.Schemas["Acknowledgement"] = c.Schemas["Ack"]
			delete(c.Schemas, "Ack")
		}},
		{"property added", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "Ack", func(s map[string]any) { at(s, "properties")["generation"] = map[string]any{"type": "integer"} })
		}},
		{"property type changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "Ack", func(s map[string]any) { at(s, "properties", "accepted")["type"] = "string" })
		}},
		{"property named description removed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) { delete(at(s, "properties"), "description") })
		}},
		{"property named title changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) { at(s, "properties", "title")["type"] = "integer" })
		}},
		{"required grew", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "PodStatus", func(s map[string]any) { s["required"] = []any{"pod", "ready", "message"} })
		}},
		{"enum value holding a description changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) {
				at(s, "properties", "phase")["enum"] = []any{"Pending", "Running", map[string]any{"description": "changed"}}
			})
		}},
		{"const holding a title changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) {
				items := at(s, "properties", "taints")["prefixItems"].([]any)
				items[0].(map[string]any)["const"] = map[string]any{"title": "changed"}
			})
		}},
		{"default changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) { at(s, "properties", "title")["default"] = "" })
		}},
		{"unknown keyword changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) { at(s, "x-vendor")["description"] = "changed" })
		}},
		{"minimum changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) { at(s, "properties", "cpu")["minimum"] = 0.5 })
		}},
		{"nested $defs enum changed", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) {
				at(s, "$defs", "Taint", "properties", "effect")["enum"] = []any{"NoSchedule"}
			})
		}},
		{"unevaluatedProperties opened", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) { s["unevaluatedProperties"] = true })
		}},
		{"boolean schema flipped", func(t testing.TB, c *handshake.Contract) { c.Schemas["Lease"] = json.RawMessage(`false`) }},
		{"string value changed in a non-ASCII way", func(t testing.TB, c *handshake.Contract) {
			editSchema(t, c, "NodeStatus", func(s map[string]any) { at(s, "properties", "labels", "propertyNames")["pattern"] = "^[a-zé]+$" })
		}},
	}
	seen := map[string]string{mustFingerprint(t, base): "the unchanged contract"}
	for _, tt := range tests {
		c := cloneContract(base)
		tt.change(t, c)
		fp := mustFingerprint(t, c)
		if earlier, ok := seen[fp]; ok {
			t.Errorf("%s: fingerprint %s is the same as for %s", tt.name, fp, earlier)
		}
		seen[fp] = tt.name
	}
}

// TestDescriptionPropertyKept checks that a property named "description" is
// in the canonical form with its schema, while its own annotation is not.
func TestDescriptionPropertyKept(t *testing.T) {
	t.Parallel()
	c := loadContract(t, filepath.Join(goldenDir, "nodestatus-v2.json"))
	canonical, err := handshake.Canonical(c)
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeJSON(t, canonical)
	node := at(doc, "schemas", "NodeStatus")
	prop, ok := at(node, "properties")["description"].(map[string]any)
	if !ok {
		t.Fatalf("property description missing from %v", at(node, "properties"))
	}
	if len(prop) != 1 || prop["type"] != "string" {
		t.Errorf(`property description = %v, want {"type":"string"}`, prop)
	}
	if _, ok := node["description"]; ok {
		t.Error("the schema's own description annotation survived")
	}
	if req := node["required"].([]any); len(req) != 2 || req[1] != "description" {
		t.Errorf("required = %v, want [nodeName description]", req)
	}
}
