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
func benchObject(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, benchmsg.InstanceJSON()); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkDecodeNodeStatus is the generated decoder on the benchmark
// object: what each watcher of the fan-out workloads (P4) pays per change,
// as UnmarshalJSON (strings sliced out of one copy of the input) and as
// UnmarshalSharedJSON (strings sliced out of the input itself, as the
// informers decode the frames their feed shares), beside encoding/json
// decoding the same bytes into the hand-written benchmsg.NodeStatus (what
// the etcd and gRPC anchors' watchers pay). Its ns/op, B/op and allocs/op
// are the decoder's figures in docs/topics.md; cpu-ns/op is the process's
// CPU time per decode (garbage collection included), which a loaded
// machine disturbs less than ns/op, the wall time.
func BenchmarkDecodeNodeStatus(b *testing.B) {
	data := benchObject(b)
	for _, bc := range []struct {
		name   string
		decode func(*NodeStatus, []byte) error
	}{
		{"copy", (*NodeStatus).UnmarshalJSON},
		{"shared", (*NodeStatus).UnmarshalSharedJSON},
		{"encoding-json", func(_ *NodeStatus, data []byte) error {
			var m benchmsg.NodeStatus
			return json.Unmarshal(data, &m)
		}},
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

// BenchmarkDeepCopyNodeStatus is the generated deep copy of the decoded
// benchmark object beside its decode: what each informer of a feed pays
// per change when the feed decodes it once (framework.Watch), against
// BenchmarkDecodeNodeStatus/shared, what it pays decoding it itself
// (framework.DecodeEach).
func BenchmarkDeepCopyNodeStatus(b *testing.B) {
	var m NodeStatus
	if err := m.UnmarshalSharedJSON(benchObject(b)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := benchrun.StartCPU()
	for b.Loop() {
		if m.DeepCopy() == nil {
			b.Fatal("no copy")
		}
	}
	b.ReportMetric(float64(cpu.Used().Nanoseconds())/float64(b.N), "cpu-ns/op")
}
