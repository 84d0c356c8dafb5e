package wire

import (
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// multiRequestCorpus holds multi-call bodies: the client's plain shape and
// everything around it that the one-pass reader must either decode as
// encoding/json does or leave to it.
var multiRequestCorpus = []string{
	`{"calls":[]}`,
	`{"calls":null}`,
	`{}`,
	`{"calls":[{"method":"ReportStatus","request":{"nodeName":"n-1","conditions":[{"type":"Ready","status":"True"}]}}]}`,
	`{"calls":[{"method":"A","timeout":"5000m","header":{"Traceparent":"t-1"},"request":{"a":[1,-2.5e3,0.1,true,false,null,"x\"y\\u00e9\n"]}},{"method":"B","request":[]}]}`,
	` { "calls" : [ { "method" : "A" , "request" : { } } ] } `,
	`{"calls":[{"request":"just a string","method":"A"}]}`,
	`{"calls":[{"method":"A","request":1e400}]}`,
	`{"calls":[{"method":"A","request":{"deep":[[[[[[[[[[{}]]]]]]]]]]}}]}`,
	`{"calls":[{"method":"A","request":null}]}`,
	`{"calls":[{"method":"A","header":{},"request":{}}]}`,
	`{"calls":[{"method":"A","header":null,"request":{}}]}`,
	// outside the plain shape: encoding/json decides
	`{"Calls":[{"Method":"A","request":{}}]}`,
	`{"calls":[{"method":"A\u0042","request":{}}]}`,
	`{"calls":[{"method":"A","request":{},"extra":1}]}`,
	`{"calls":[{"method":"A","method":"B","request":{}}]}`,
	`{"calls":[],"calls":[{"method":"A","request":{}}]}`,
	`{"calls":[{"method":"A","header":{"k":"1","k":"2"},"request":{}}]}`,
	"{\"calls\":[{\"method\":\"\xff\",\"request\":{}}]}",
	"{\"calls\":[{\"method\":\"A\",\"request\":\"\xff\"}]}",
	`{"calls":[{"method":"A","request":{"a":1}}],"other":true}`,
	// malformed: refused
	`{"calls":[{"method":"A","request":{"a":tru}}]}`,
	`{"calls":[{"method":"A","request":{"a":01}}]}`,
	`{"calls":[{"method":"A","request":{"a":1.}}]}`,
	`{"calls":[{"method":"A","request":{"a":-}}]}`,
	`{"calls":[{"method":"A","request":{"a":"\x"}}]}`,
	`{"calls":[{"method":"A","request":{"a":"\u12"}}]}`,
	"{\"calls\":[{\"method\":\"A\",\"request\":\"a\tb\"}]}",
	`{"calls":[{"method":"A","request":{"a":1,}}]}`,
	`{"calls":[{"method":"A","request":[1,]}]}`,
	`{"calls":[{"method":"A","request":{a:1}}]}`,
	`{"calls":[{"method":"A","request":{"a" 1}}]}`,
	`{"calls":[{"method":"A","request":{}}]`,
	`{"calls":[{"method":"A","request":{}}]}}`,
	`{"calls":[{"method":"A","request":{}}]} x`,
	`{"calls":[{"method":"A","request":}]}`,
	`{"calls":[{"method":1,"request":{}}]}`,
	`{"calls":[{"method":"A","timeout":5,"request":{}}]}`,
	`{"calls":[{"method":"A","header":{"k":1},"request":{}}]}`,
	`{"calls":{}}`,
	`{"calls":[1]}`,
	`[]`,
	``,
	`{"calls":[{"method":"A","request":{"a":"` + strings.Repeat("x", 100) + `"}}]}`,
	`{"calls":[{"method":"A","request":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}]}`,
}

// sameAsEncodingJSON checks the one-pass reader against encoding/json on
// one body: whatever it accepts, encoding/json decodes to the same value.
func sameAsEncodingJSON[T any](t *testing.T, body []byte, split func([]byte) (T, bool), decode func([]byte) (T, error)) {
	t.Helper()
	var want T
	wantErr := json.Unmarshal(body, &want)
	got, ok := split(body)
	if ok {
		require.NoError(t, wantErr, "the one-pass reader accepted what encoding/json refuses: %q", body)
		assert.Equal(t, want, got, "%q", body)
	}
	got, err := decode(body)
	if wantErr != nil {
		assert.Equal(t, wantErr.Error(), err.Error(), "refused in encoding/json's words: %q", body)
		return
	}
	require.NoError(t, err, "%q", body)
	assert.Equal(t, want, got, "%q", body)
}

func TestMultiRequestDecodesAsEncodingJSONDoes(t *testing.T) {
	plain := 0
	for _, body := range multiRequestCorpus {
		sameAsEncodingJSON(t, []byte(body), splitMultiRequest, DecodeMultiRequest)
		if _, ok := splitMultiRequest([]byte(body)); ok {
			plain++
		}
	}
	// The client's own shape takes the one pass.
	assert.GreaterOrEqual(t, plain, 12)
	_, ok := splitMultiRequest([]byte(multiRequestCorpus[4]))
	assert.True(t, ok)
}

func TestMultiCallBodyIsWhatTheServerDecodes(t *testing.T) {
	b := []byte(`{"calls":[`)
	b = AppendMultiCall(b, "ReportStatus", "1500m", map[string]string{"Traceparent": "t-1"}, []byte(`{"nodeName":"n"}`))
	b = append(b, ',')
	b = AppendMultiCall(b, "Other", "", nil, []byte(`[1,2]`))
	b = append(b, `]}`...)
	in, ok := splitMultiRequest(b)
	require.True(t, ok, "%s", b)
	assert.Equal(t, MultiRequest{Calls: []MultiCall{
		{Method: "ReportStatus", Timeout: "1500m", Header: map[string]string{"Traceparent": "t-1"}, Request: json.RawMessage(`{"nodeName":"n"}`)},
		{Method: "Other", Request: json.RawMessage(`[1,2]`)},
	}}, in)
}

// A body built of parts is byte for byte the one AppendMultiCall writes,
// and reads the same as often as it is read (a resend reads it again).
func TestMultiCallBodyPartsAreTheAppendedBody(t *testing.T) {
	type call struct {
		method, timeout string
		header          map[string]string
		request         []byte
	}
	for _, calls := range [][]call{
		nil,
		{{"ReportStatus", "", nil, []byte(`{"nodeName":"n"}`)}},
		{{"ReportStatus", "1500m", map[string]string{"Traceparent": "t-1"}, []byte(`{"nodeName":"n"}`)},
			{"Other", "", nil, []byte(`[1,2]`)}, {"Third", "2s", nil, []byte(`{}`)}},
	} {
		want := []byte(`{"calls":[`)
		body := NewMultiCallBody(1) // grows past the room it was given
		for i, c := range calls {
			if i > 0 {
				want = append(want, ',')
			}
			want = AppendMultiCall(want, c.method, c.timeout, c.header, c.request)
			body.Add(c.method, c.timeout, c.header, c.request)
		}
		want = append(want, `]}`...)
		parts, n := body.Parts()
		assert.Equal(t, len(want), n)
		for range 2 {
			read := append(net.Buffers(nil), parts...)
			got, err := io.ReadAll(&read)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		}
		if len(calls) > 0 {
			_, ok := splitMultiRequest(want)
			assert.True(t, ok, "%s", want)
		}
	}
}

var multiResponseCorpus = []string{
	`{"results":[]}`,
	`{"results":[{"ok":{"accepted":true,"generation":7}},{"ok":{"accepted":false},"replayed":true},{"replayed":false,"ok":[]}]}`,
	`{"results":[{}]}`,
	// outside the plain shape
	`{"results":[{"error":{"code":"conflict","message":"no"}}]}`,
	`{"results":null}`,
	`{}`,
	`{"results":[{"ok":null}]}`,
	`{"results":[{"ok":{},"ok":{}}]}`,
	`{"results":[{"OK":{}}]}`,
	// malformed
	`{"results":[{"ok":{"a":}}]}`,
	`{"results":[{"ok":{}},]}`,
	`{"results":[{"replayed":1}]}`,
	`{"results":[]} []`,
}

func TestMultiResponseDecodesAsEncodingJSONDoes(t *testing.T) {
	for _, body := range multiResponseCorpus {
		sameAsEncodingJSON(t, []byte(body), splitMultiResponse, DecodeMultiResponse)
	}
	_, ok := splitMultiResponse([]byte(multiResponseCorpus[1]))
	assert.True(t, ok)
}

// The server's answer is encoding/json's, byte for byte, for answers
// without characters encoding/json escapes for HTML.
func TestMultiResponseEncodesAsEncodingJSONDoes(t *testing.T) {
	w := apierror.ToWire(apierror.Errorf(apierror.CodeConflict, "node <7> refused"))
	for _, out := range []BatchResponse{
		{Results: []Result{}},
		{Results: []Result{{OK: json.RawMessage(`{"accepted":true}`)}, {Error: &w}, {OK: json.RawMessage(`[]`), Replayed: true}, {Error: &w, Replayed: true}, {}}},
	} {
		want, err := json.Marshal(out)
		require.NoError(t, err)
		got, err := AppendMultiResponse(nil, out)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
		back, err := DecodeMultiResponse(got)
		require.NoError(t, err)
		assert.Equal(t, out, back)
	}
}

func FuzzMultiRequestEnvelope(f *testing.F) {
	for _, body := range multiRequestCorpus {
		f.Add([]byte(body))
	}
	for _, body := range multiResponseCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsEncodingJSON(t, body, splitMultiRequest, DecodeMultiRequest)
		sameAsEncodingJSON(t, body, splitMultiResponse, DecodeMultiResponse)
	})
}
