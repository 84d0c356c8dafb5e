package benchgen

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
)

// benchObject is the benchmark NodeStatus as compact JSON: the bytes a
// fan-out watcher decodes for every change.
func benchObject(b *testing.B) []byte {
	b.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, benchmsg.InstanceJSON()); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkDecodeNodeStatus is the generated decoder on the benchmark
// object: what each watcher of the fan-out workloads (P4) pays per change,
// as UnmarshalJSON (strings sliced out of one copy of the input) and as
// UnmarshalSharedJSON (strings sliced out of the input itself, as the
// informers decode the frames their feed shares). Its ns/op, B/op and
// allocs/op are the decoder's figures in docs/topics.md; cpu-ns/op is the
// process's CPU time per decode (garbage collection included), which a
// loaded machine disturbs less than ns/op, the wall time.
func BenchmarkDecodeNodeStatus(b *testing.B) {
	data := benchObject(b)
	for _, bc := range []struct {
		name   string
		decode func(*NodeStatus, []byte) error
	}{
		{"copy", (*NodeStatus).UnmarshalJSON},
		{"shared", (*NodeStatus).UnmarshalSharedJSON},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu := benchrun.StartCPU()
			for b.Loop() {
				var m NodeStatus
				if err := bc.decode(&m, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu.Used().Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
