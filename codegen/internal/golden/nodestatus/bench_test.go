package nodestatus

import (
	"bytes"
	"encoding/json"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// benchMessage returns the benchmark NodeStatus as compact JSON, and its
// bundled schema compiled as the runtime compiles it (draft 2020-12, format
// assertions on).
func benchMessage(b *testing.B) ([]byte, *jsonschema.Schema) {
	b.Helper()
	raw, err := os.ReadFile("testdata/nodestatus.json")
	if err != nil {
		b.Fatal(err)
	}
	var data bytes.Buffer
	if err := json.Compact(&data, raw); err != nil {
		b.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	comp.AssertFormat = true
	if err := comp.AddResource("bench.json", bytes.NewReader(Contract.Model().Schemas["BenchNodeStatus"])); err != nil {
		b.Fatal(err)
	}
	schema, err := comp.Compile("bench.json")
	if err != nil {
		b.Fatal(err)
	}
	return data.Bytes(), schema
}

// decodeAny decodes as the runtime does before validating with
// jsonschema/v5: numbers as json.Number.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// BenchmarkP8 is target P8 of the benchmarks: generated decode + Validate
// of the benchmark NodeStatus against decode-to-any + jsonschema/v5, on the
// same bytes in every iteration, one after the other. The generated code
// is measured twice: called directly (UnmarshalJSON, then Validate), and as
// the runtime calls it today (json.Unmarshal, which checks the syntax and
// skips the value once more before calling UnmarshalJSON). It reports the
// time of each and the speedups.
func BenchmarkP8(b *testing.B) {
	data, schema := benchMessage(b)
	var direct, runtime, reference time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		var m BenchNodeStatus
		if err := m.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		if err := m.Validate(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		var r BenchNodeStatus
		if err := json.Unmarshal(data, &r); err != nil {
			b.Fatal(err)
		}
		if err := r.Validate(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		v, err := decodeAny(data)
		if err != nil {
			b.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			b.Fatal(err)
		}
		direct += t1.Sub(t0)
		runtime += t2.Sub(t1)
		reference += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(direct.Nanoseconds())/n, "generated-ns/op")
	b.ReportMetric(float64(runtime.Nanoseconds())/n, "via-json.Unmarshal-ns/op")
	b.ReportMetric(float64(reference.Nanoseconds())/n, "jsonschema-ns/op")
	b.ReportMetric(float64(reference)/float64(direct), "speedup")
	b.ReportMetric(float64(reference)/float64(runtime), "speedup-via-json.Unmarshal")
}

// BenchmarkValidation measures each way of accepting the benchmark
// NodeStatus on its own.
func BenchmarkValidation(b *testing.B) {
	data, schema := benchMessage(b)
	b.Run("generated/json.Unmarshal+Validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m BenchNodeStatus
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generated/UnmarshalJSON+Validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m BenchNodeStatus
			if err := m.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generated/Validate", func(b *testing.B) {
		var m BenchNodeStatus
		if err := m.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema/decode-any+Validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := decodeAny(data)
			if err != nil {
				b.Fatal(err)
			}
			if err := schema.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// plainNodeStatus has the shape of BenchNodeStatus with encoding/json's
// own decoding and encoding: the baseline for the generated codec.
type plainNodeStatus struct {
	NodeName   string `json:"nodeName"`
	Conditions []struct {
		Type              string     `json:"type"`
		Status            string     `json:"status"`
		Reason            *string    `json:"reason,omitzero"`
		Message           *string    `json:"message,omitzero"`
		LastHeartbeatTime *time.Time `json:"lastHeartbeatTime,omitzero"`
	} `json:"conditions"`
	Capacity    map[string]string `json:"capacity"`
	Allocatable map[string]string `json:"allocatable"`
	Addresses   []struct {
		Type    string `json:"type"`
		Address string `json:"address"`
	} `json:"addresses"`
	NodeInfo struct {
		MachineID               *string `json:"machineID,omitzero"`
		SystemUUID              *string `json:"systemUUID,omitzero"`
		BootID                  *string `json:"bootID,omitzero"`
		KernelVersion           *string `json:"kernelVersion,omitzero"`
		OSImage                 *string `json:"osImage,omitzero"`
		ContainerRuntimeVersion *string `json:"containerRuntimeVersion,omitzero"`
		KubeletVersion          *string `json:"kubeletVersion,omitzero"`
		KubeProxyVersion        *string `json:"kubeProxyVersion,omitzero"`
	} `json:"nodeInfo"`
	Images []string `json:"images"`
}

// BenchmarkCodec measures decoding and encoding the benchmark NodeStatus
// with the generated types beside encoding/json on a plain struct of the
// same shape.
func BenchmarkCodec(b *testing.B) {
	data, _ := benchMessage(b)
	b.Run("decode/generated-via-json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var m BenchNodeStatus
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/generated-direct", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var m BenchNodeStatus
			if err := m.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var m plainNodeStatus
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	var gen BenchNodeStatus
	var plain plainNodeStatus
	if err := json.Unmarshal(data, &gen); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(data, &plain); err != nil {
		b.Fatal(err)
	}
	b.Run("encode/generated-types", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := json.Marshal(&gen); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/appended-via-json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := json.Marshal(appendedNodeStatus{&gen}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/appended-direct", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			buf = appendNodeStatus(buf[:0], &gen)
		}
	})
	b.Run("encode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := json.Marshal(&plain); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The encoder below is what generated marshalling would be for
// BenchNodeStatus: appending members straight to a buffer, with
// encoding/json's string escaping. It exists to measure whether generating
// encoders would pay (BenchmarkCodec/encode/appended…); the generated types
// keep encoding/json.

// appendNodeStatus appends m as encoding/json would encode it.
func appendNodeStatus(b []byte, m *BenchNodeStatus) []byte {
	b = append(b, `{"nodeName":`...)
	b = appendString(b, m.NodeName)
	b = append(b, `,"conditions":`...)
	if m.Conditions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range m.Conditions {
			c := &m.Conditions[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = appendString(b, string(c.Type))
			b = append(b, `,"status":`...)
			b = appendString(b, string(c.Status))
			if c.Reason != nil {
				b = append(b, `,"reason":`...)
				b = appendString(b, *c.Reason)
			}
			if c.Message != nil {
				b = append(b, `,"message":`...)
				b = appendString(b, *c.Message)
			}
			if c.LastHeartbeatTime != nil {
				b = append(b, `,"lastHeartbeatTime":"`...)
				b = c.LastHeartbeatTime.AppendFormat(b, time.RFC3339Nano)
				b = append(b, '"')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"capacity":`...)
	b = appendStringMap(b, m.Capacity)
	b = append(b, `,"allocatable":`...)
	b = appendStringMap(b, m.Allocatable)
	b = append(b, `,"addresses":[`...)
	for i, a := range m.Addresses {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendString(b, string(a.Type))
		b = append(b, `,"address":`...)
		b = appendString(b, a.Address)
		b = append(b, '}')
	}
	b = append(b, `],"nodeInfo":{`...)
	first := true
	for _, f := range []struct {
		name  string
		value *string
	}{{"machineID", m.NodeInfo.MachineID}, {"systemUUID", m.NodeInfo.SystemUUID}, {"bootID", m.NodeInfo.BootID},
		{"kernelVersion", m.NodeInfo.KernelVersion}, {"osImage", m.NodeInfo.OSImage},
		{"containerRuntimeVersion", m.NodeInfo.ContainerRuntimeVersion}, {"kubeletVersion", m.NodeInfo.KubeletVersion},
		{"kubeProxyVersion", m.NodeInfo.KubeProxyVersion}} {
		if f.value == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, f.name)
		b = append(b, ':')
		b = appendString(b, *f.value)
	}
	b = append(b, `},"images":[`...)
	for i, s := range m.Images {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, "]}"...)
}

func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// appendString appends s quoted as encoding/json quotes it; strings that
// need escaping go through encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendedNodeStatus makes BenchNodeStatus encode through appendNodeStatus
// under json.Marshal, as a generated MarshalJSON would.
type appendedNodeStatus struct{ *BenchNodeStatus }

func (a appendedNodeStatus) MarshalJSON() ([]byte, error) {
	return appendNodeStatus(make([]byte, 0, 2048), a.BenchNodeStatus), nil
}

// TestAppendedEncoderMatchesEncodingJSON keeps the measured encoder honest:
// it writes exactly what encoding/json writes.
func TestAppendedEncoderMatchesEncodingJSON(t *testing.T) {
	raw, err := os.ReadFile("testdata/nodestatus.json")
	if err != nil {
		t.Fatal(err)
	}
	var m BenchNodeStatus
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	reason := `<"quoted" & 'é'>`
	m.Conditions[0].Reason = &reason
	want, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendNodeStatus(nil, &m); string(got) != string(want) {
		t.Errorf("appended\n%s\nencoding/json\n%s", got, want)
	}
}
