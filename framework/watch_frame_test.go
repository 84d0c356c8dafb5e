package framework

import (
	"encoding/json"
	"reflect"
	"testing"
)

type frameObject struct {
	A string `json:"a"`
	B int    `json:"b,omitempty"`
}

// FuzzDecodeFrame checks the hand-written decoding of set frames against
// encoding/json: whatever the fast path accepts, encoding/json reads the
// same way.
func FuzzDecodeFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"set","key":"node-1","epoch":"9c41d2a07f3e11b2","seq":17,"object":{"a":"x","b":2}}` + "\n",
		`{"type":"set","key":"node-1","epoch":"9c41d2a07f3e11b2","seq":17,"rev":42,"object":{"a":"x","b":2}}` + "\n",
		`{"type":"set","key":"n","epoch":"e","seq":1,"rev":01,"object":{}}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"rev":18446744073709551616,"object":{}}`,
		`{"type":"set","key":"n","epoch":"e","seq":0,"object":{}}`,
		`{"type":"set","key":"n","epoch":"e","seq":007,"object":{}}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":null}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":{"a":"}"}}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":{"a":"x"},"key":"m"}`,
		`{"type":"set","key":"n\u00e9","epoch":"e","seq":1,"object":{"a":"x"}}`,
		`{"type":"set","key":"n\"q","epoch":"e","seq":1,"object":{"a":"x"}}`,
		"{\"type\":\"set\",\"key\":\"\xff\",\"epoch\":\"e\",\"seq\":1,\"object\":{}}",
		`{"type":"set","key":"n","epoch":"e","seq":18446744073709551616,"object":{}}`,
		`{"type":"delete","key":"n","epoch":"e","seq":2,"writerLost":true}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"rev":3,"header":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"object":{"a":"x"}}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"header":{"a":"1","a":"2"},"object":{}}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"header":null,"object":{}}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"header":{"a":1},"object":{}}`,
		`{"type":"delete","key":"n","epoch":"e","seq":2,"rev":4,"header":{"traceparent":"x","tracestate":"y"}}`,
		`{"type":"synced","instance":"abc"}`,
		`{"type":"synced","instance":"abc","history":"h","rev":9,"resumed":true,"writer":false}`,
		`{"type":"closing","reason":"draining"}`,
		`{"type":"ping"}`,
		`not json`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast watchFrame[frameObject]
		fastErr := decodeFrame(line, &fast)
		var full watchFrame[frameObject]
		fullErr := json.Unmarshal(line, &full)
		if (fastErr == nil) != (fullErr == nil) {
			t.Fatalf("decodeFrame error %v, encoding/json error %v, for %q", fastErr, fullErr, line)
		}
		if fastErr == nil && !reflect.DeepEqual(fast, full) {
			t.Fatalf("decodeFrame read %+v, encoding/json %+v, from %q", fast, full, line)
		}
	})
}

// TestFrameHeaderRoundTrips: the header a change carries is written into
// its set and delete frames and read back by the informer's fast path
// (not left to encoding/json), and a header over its bound is not carried.
func TestFrameHeaderRoundTrips(t *testing.T) {
	header := encodeChangeHeader(map[string][]string{"traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	set, object := encodeSetFrame("node-1", ObjectVersion{Epoch: "e", Seq: 3}, 7, []byte(`{"a":"x"}`), header)
	if string(object) != `{"a":"x"}` {
		t.Fatalf("object %q", object)
	}
	del := encodeDeleteFrame("node-1", ObjectVersion{Epoch: "e", Seq: 4}, 8, false, header)
	for _, frame := range [][]byte{set.frame, del.frame} {
		head, _, ok := readFrame(frame)
		if !ok {
			t.Fatalf("the fast path refused %s", frame)
		}
		if got := head.Header["traceparent"]; got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
			t.Errorf("header %v read from %s", head.Header, frame)
		}
		var full watchFrame[frameObject]
		if err := json.Unmarshal(frame, &full); err != nil || !reflect.DeepEqual(full.Header, head.Header) {
			t.Errorf("encoding/json read %v (%v) from %s", full.Header, err, frame)
		}
	}
	plain, _ := encodeSetFrame("node-1", ObjectVersion{Epoch: "e", Seq: 3}, 7, []byte(`{}`), nil)
	if want := `{"type":"set","key":"node-1","epoch":"e","seq":3,"rev":7,"object":{}}` + "\n"; string(plain.frame) != want {
		t.Errorf("a frame without a header: %s, want %s", plain.frame, want)
	}
	big := make([]byte, maxChangeHeaderBytes)
	for i := range big {
		big[i] = 'x'
	}
	if h := encodeChangeHeader(map[string][]string{"tracestate": {string(big)}}); h != nil {
		t.Errorf("a header of %d bytes was carried", len(h))
	}
}

func TestFrameTypeKey(t *testing.T) {
	tests := []struct {
		line    string // the frame
		typ     string // the type read
		key     string // the key read
		rev     uint64 // the revision read
		decodes bool   // whether the frame could be read at all
	}{
		{`{"type":"set","key":"node-1","epoch":"e","seq":1,"object":{}}`, "set", "node-1", 0, true},
		{`{"type":"set","key":"node-1","epoch":"e","seq":1,"rev":7,"object":{}}`, "set", "node-1", 7, true},
		{`{"type":"delete","key":"node-1","epoch":"e","seq":2}`, "delete", "node-1", 0, true},
		{`{"type":"delete","key":"node-1","epoch":"e","seq":2,"rev":8,"writerLost":true}`, "delete", "node-1", 8, true},
		{`{"type":"set","key":"a\"b","epoch":"e","seq":1,"rev":9,"object":{}}`, "set", `a"b`, 9, true},
		{`{"key":"k","type":"delete","rev":10}`, "delete", "k", 10, true},
		{`{"type":"synced","instance":"i"}`, "synced", "", 0, true},
		{`{"type":`, "", "", 0, false},
	}
	for _, tt := range tests {
		typ, key, rev, ok := frameTypeKey([]byte(tt.line))
		if typ != tt.typ || key != tt.key || rev != tt.rev || ok != tt.decodes {
			t.Errorf("frameTypeKey(%s) = %q, %q, %d, %v; want %q, %q, %d, %v", tt.line, typ, key, rev, ok, tt.typ, tt.key, tt.rev, tt.decodes)
		}
	}
}
