package nodestatus

import (
	"bytes"
	"encoding/json"
	"os"
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
	b.Run("encode/AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			var err error
			if buf, err = gen.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/AppendJSON-copied", func(b *testing.B) {
		// As the runtime encodes: into a reused buffer, then copied out.
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			var err error
			if buf, err = gen.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
			_ = bytes.Clone(buf)
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
