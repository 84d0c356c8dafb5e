package frames

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
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
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":{"a":"x"}} x}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":{"a":"x"}}}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":{"a":"x"}` + "\n",
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":{"a":"x"} ,"seq":2}`,
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":{"a":"x"} } ` + "\r\n",
		`{"type":"set","key":"n","epoch":"e","seq":1,"object":}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast Frame[frameObject]
		fastErr := Decode(line, &fast)
		var full Frame[frameObject]
		fullErr := json.Unmarshal(line, &full)
		if (fastErr == nil) != (fullErr == nil) {
			t.Fatalf("Decode error %v, encoding/json error %v, for %q", fastErr, fullErr, line)
		}
		if fastErr == nil && !reflect.DeepEqual(fast, full) {
			t.Fatalf("Decode read %+v, encoding/json %+v, from %q", fast, full, line)
		}
		var fastShared Frame[sharedObject]
		fastSharedErr := Decode(line, &fastShared)
		var fullShared Frame[sharedObject]
		fullSharedErr := json.Unmarshal(line, &fullShared)
		if (fastSharedErr == nil) != (fullSharedErr == nil) {
			t.Fatalf("Decode of a shared object: error %v, encoding/json error %v, for %q", fastSharedErr, fullSharedErr, line)
		}
		if fastSharedErr == nil && !reflect.DeepEqual(fastShared, fullShared) {
			t.Fatalf("Decode of a shared object read %+v, encoding/json %+v, from %q", fastShared, fullShared, line)
		}
	})
}

// sharedObject is frameObject with a decoder of the generated kind
// (jsonwire.SharedUnmarshaler: it checks the whole value and that nothing
// follows it), which Decode hands an object that ends its frame unscanned.
type sharedObject frameObject

// UnmarshalSharedJSON decodes one value of raw, which must be all of it.
func (o *sharedObject) UnmarshalSharedJSON(raw []byte) error {
	d := jsonwire.NewSharedDecoder(raw)
	v, err := d.RawBytes()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(v, (*frameObject)(o)); err != nil {
		return err
	}
	return d.End()
}

// traceHeader is a write's header as a change carries it: what the
// root's encodeChangeHeader makes of a traceparent (its test checks it).
var traceHeader = []byte(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)

// TestFrameHeaderRoundTrips: the header a change carries is written into
// its set and delete frames and read back by the informer's fast path
// (not left to encoding/json). That a header over its bound is not
// carried is checked where it is encoded (TestChangeHeaderIsBounded).
func TestFrameHeaderRoundTrips(t *testing.T) {
	header := traceHeader
	set, object := EncodeSet(Change{Key: "node-1", Epoch: "e", Seq: 3, Rev: 7, Header: header}, []byte(`{"a":"x"}`))
	if string(object) != `{"a":"x"}` {
		t.Fatalf("object %q", object)
	}
	del := EncodeDelete(Change{Key: "node-1", Epoch: "e", Seq: 4, Rev: 8, Header: header})
	for _, frame := range [][]byte{set, del} {
		head, _, ok := Read(frame)
		if !ok {
			t.Fatalf("the fast path refused %s", frame)
		}
		if got := head.Header["traceparent"]; got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
			t.Errorf("header %v read from %s", head.Header, frame)
		}
		var full Frame[frameObject]
		if err := json.Unmarshal(frame, &full); err != nil || !reflect.DeepEqual(full.Header, head.Header) {
			t.Errorf("encoding/json read %v (%v) from %s", full.Header, err, frame)
		}
	}
	plain, _ := EncodeSet(Change{Key: "node-1", Epoch: "e", Seq: 3, Rev: 7}, []byte(`{}`))
	if want := `{"type":"set","key":"node-1","epoch":"e","seq":3,"rev":7,"object":{}}` + "\n"; string(plain) != want {
		t.Errorf("a frame without a header: %s, want %s", plain, want)
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
		typ, key, rev, ok := TypeKey([]byte(tt.line))
		if typ != tt.typ || key != tt.key || rev != tt.rev || ok != tt.decodes {
			t.Errorf("TypeKey(%s) = %q, %q, %d, %v; want %q, %q, %d, %v", tt.line, typ, key, rev, ok, tt.typ, tt.key, tt.rev, tt.decodes)
		}
	}
}

// TestEncodeFrames pins the bytes of a delete frame made because its
// writer was lost, a synced marker, a ping and a closing frame.
func TestEncodeFrames(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{string(EncodeDelete(Change{Key: `a"b`, Epoch: "e", Seq: 2, Rev: 9, WriterLost: true})),
			`{"type":"delete","key":"a\"b","epoch":"e","seq":2,"rev":9,"writerLost":true}` + "\n"},
		{string(AppendSynced(nil, Synced{Instance: "i", History: "h", Rev: 4, Resumed: true})),
			`{"type":"synced","instance":"i","history":"h","rev":4,"resumed":true,"writer":false}` + "\n"},
		{string(Ping), `{"type":"ping"}` + "\n"},
		{string(AppendClosing(nil, "draining")), `{"type":"closing","reason":"draining"}` + "\n"},
	} {
		if tt.got != tt.want {
			t.Errorf("encoded %s, want %s", tt.got, tt.want)
		}
	}
}

// TestReadSetFrameAllocatesNothing: reading a set frame's head (its
// strings are slices of the line, its seq and rev parsed in place) costs
// no allocation, as every informer does it for every delivery.
func TestReadSetFrameAllocatesNothing(t *testing.T) {
	line := []byte(`{"type":"set","key":"node-0042","epoch":"9c41d2a07f3e11b2","seq":123456,"rev":7654321,"object":{"a":"x","b":2}}` + "\n")
	var head Head
	allocs := testing.AllocsPerRun(100, func() {
		var ok bool
		if head, _, ok = Read(line); !ok {
			t.Fatal("Read refused a set frame in the plain shape")
		}
	})
	if head.Seq != 123456 || head.Rev != 7654321 || head.Key != "node-0042" {
		t.Fatalf("Read = %+v", head)
	}
	if allocs != 0 {
		t.Errorf("Read of a set frame took %v allocations, want 0", allocs)
	}
}
