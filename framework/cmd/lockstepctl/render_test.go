package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// sameAsJSON checks that YAML reads writeYAML's output of doc back as the
// very value JSON reads doc as: go.yaml.in/yaml/v3 is the reference.
func sameAsJSON(t *testing.T, doc string) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, writeYAML(&out, []byte(doc)), doc)
	var fromYAML any
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &fromYAML), "%s\nas YAML:\n%s", doc, out.String())
	// Through JSON, so that numbers compare as JSON reads them.
	b, err := json.Marshal(fromYAML)
	require.NoError(t, err)
	var got, want any
	require.NoError(t, json.Unmarshal(b, &got))
	require.NoError(t, json.Unmarshal([]byte(doc), &want))
	assert.Equal(t, want, got, "%s\nas YAML:\n%s", doc, out.String())
	return out.String()
}

func TestWriteYAMLReadsBackAsTheJSON(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, `"x"`, `1`, `null`,
		`{"a":1,"b":"two","c":true,"d":null,"e":-1.5e3}`,
		`{"empty":{},"none":[],"nested":{"x":{"y":{"z":[1,2]}}}}`,
		`{"list":[{"a":1,"b":{"c":[{"d":2}]}},{},[],[[1],[]],"s"]}`,
		`[[[]],[{}],[{"a":[]}]]`,
		`{"yes":"no","on":"off","null":"~","true":"false","y":"n","num":"0123","float":"1.5","neg":"-1","dot":".5","inf":".inf"}`,
		`{"colon: space":"a: b","hash":"a #b","dash":"- x","quote":"'x'","dq":"\"","bs":"\\","nl":"a\nb","tab":"\t","empty":""}`,
		`{"url":"http://127.0.0.1:8080/x","fp":"lsfp1:00ab","ver":"1.0.0","time":"2026-12-07T10:00:00Z","at":"@x","star":"*x","amp":"&x","pct":"%x","bang":"!x"}`,
		`{"esc":"\u001b]52;c;x\u0007","c1":"\u0085\u009b","bidi":"\u202e","lead space":" x","trail":"x "}`,
		string(hostileStatus(nil)),
	} {
		sameAsJSON(t, doc)
	}
	out := sameAsJSON(t, `{"component":"nodecontroller","sessions":[{"peer":{"component":"kubelet"},"version":"1.0.0"}]}`)
	assert.Equal(t, "component: nodecontroller\nsessions:\n  - peer:\n      component: kubelet\n    version: \"1.0.0\"\n", out)
}

// TestWriteYAMLRandom compares random JSON documents with the reference.
func TestWriteYAMLRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "node-1", "1.0.0", "yes", "", " ", "a: b", "-", "x\ny", "\u202e", "lsfp1:00", "[", "{}", "#", "1e3", "null"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(6); {
		case depth > 3 || k == 0:
			return words[r.IntN(len(words))]
		case k == 1:
			return r.IntN(100) - 50
		case k == 2:
			return r.IntN(2) == 0
		case k == 3:
			m := map[string]any{}
			for range r.IntN(4) {
				m[words[r.IntN(len(words))]] = gen(depth + 1)
			}
			return m
		default:
			var l []any
			for range r.IntN(4) {
				l = append(l, gen(depth+1))
			}
			if l == nil {
				l = []any{}
			}
			return l
		}
	}
	for range 500 {
		b, err := json.Marshal(gen(0))
		require.NoError(t, err)
		sameAsJSON(t, string(b))
	}
}

func TestWriteYAMLRefusesWhatIsNotJSON(t *testing.T) {
	for _, doc := range []string{`{"a":}`, `{"a":1} {}`, `[1,`} {
		assert.Error(t, writeYAML(&bytes.Buffer{}, []byte(doc)), doc)
	}
	assert.True(t, strings.HasPrefix(yamlString("1.0"), `"`))
}

// TestWriteIndentedJSONIsTheEncoders compares the streaming indenter with
// encoding/json's own, on the documents of the YAML tests.
func TestWriteIndentedJSONIsTheEncoders(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	docs := []any{map[string]any{}, []any{}, "x", 1.5, nil, map[string]any{"a": []any{map[string]any{}, []any{}, "{[,:]}\"\\"}}}
	var st any
	require.NoError(t, json.Unmarshal(hostileStatus(nil), &st))
	docs = append(docs, st)
	for range 200 {
		m := map[string]any{}
		for range r.IntN(5) {
			m[fmt.Sprint(r.IntN(10))] = []any{r.IntN(3), map[string]any{"k": strings.Repeat(",", r.IntN(3))}, []any{}}
		}
		docs = append(docs, m)
	}
	for _, d := range docs {
		compact, err := json.Marshal(d)
		require.NoError(t, err)
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(d))
		require.NoError(t, writeIndentedJSON(&got, compact))
		assert.Equal(t, want.String(), got.String())
	}
}
