package nodestatus

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// A table-driven decoder, measured against the generated per-field one on
// the benchmark message (docs/codegen-design.md, "Decoder shape"): each type gets
// a table of its members, and one loop walks the object, finds the member
// in the table, records it as seen and calls the member's decoder. This is
// the shape the generator would emit (one entry per member instead of a
// case of about 20 lines); it is written here by hand for BenchNodeStatus
// and the types it nests, and reuses the generated decoders of enums and
// maps, which have no members.

// tableField is one member of a table-driven decoder.
type tableField[T any] struct {
	name     string
	required bool
	decode   func(m *T, s *state) error
}

// state is one message's decoding: the decoder, and a slab the optional
// string members (held as *string) are allocated from, as the generated
// decoder allocates those of one object together.
type state struct {
	d    jsonwire.Decoder
	slab []string
}

func (s *state) string() *string {
	if len(s.slab) == 0 {
		s.slab = make([]string, 16)
	}
	p := &s.slab[0]
	s.slab = s.slab[1:]
	return p
}

// table is the member table of one struct type.
type table[T any] struct {
	fields   []tableField[T]
	required uint64
}

func newTable[T any](fields ...tableField[T]) *table[T] {
	t := &table[T]{fields: fields}
	for i, f := range fields {
		if f.required {
			t.required |= 1 << i
		}
	}
	return t
}

// index returns the position of the member named key, or -1.
func (t *table[T]) index(key []byte) int {
	for i := range t.fields {
		if string(key) == t.fields[i].name {
			return i
		}
	}
	return -1
}

// decodeTable is the one loop: it decodes an object of declared members
// only (additionalProperties: false) into m.
func decodeTable[T any](s *state, m *T, t *table[T]) error {
	d := &s.d
	if err := d.ObjectStart(); err != nil {
		return err
	}
	var zero T
	*m = zero
	var seen uint64
	next := 0 // members usually come in schema order: try the next one first
	for d.NextMember() {
		key := d.Key()
		if d.Err() != nil {
			break
		}
		i := next
		if i >= len(t.fields) || string(key) != t.fields[i].name {
			if i = t.index(key); i < 0 {
				return jsonwire.Undeclared(d, key)
			}
		}
		next = i + 1
		seen |= 1 << i
		if err := t.fields[i].decode(m, s); err != nil {
			return jsonwire.Within(err, t.fields[i].name)
		}
	}
	if err := d.Err(); err != nil {
		return err
	}
	if seen&t.required != t.required {
		var missing []string
		for i, f := range t.fields {
			if f.required && seen&(1<<i) == 0 {
				missing = append(missing, f.name)
			}
		}
		return jsonwire.Missing(d, missing...)
	}
	return nil
}

// The member decoders a generated table would reference.

func decodeString(s *state, p *string) error {
	v, err := s.d.String()
	*p = v
	return err
}

// decodeOptString decodes an optional member that may not be null.
func decodeOptString(s *state, p **string) error {
	if s.d.Null() {
		return jsonwire.NotNull(&s.d, "string")
	}
	v, err := s.d.String()
	if err != nil {
		return err
	}
	q := s.string()
	*q = v
	*p = q
	return nil
}

func decodeOptDateTime(s *state, p **time.Time) error {
	if s.d.Null() {
		return jsonwire.NotNull(&s.d, "string")
	}
	v, err := s.d.DateTime()
	if err != nil {
		return err
	}
	*p = &v
	return nil
}

// decodeSlice decodes an array (null is nil) whose items elem decodes.
func decodeSlice[E any](s *state, p *[]E, elem func(*E, *state) error) error {
	d := &s.d
	if d.Null() {
		*p = nil
		return nil
	}
	if err := d.ArrayStart(); err != nil {
		return err
	}
	items := make([]E, 0, 4)
	var zero E
	for i := 0; d.NextItem(); i++ {
		items = append(items, zero)
		if err := elem(&items[i], s); err != nil {
			return jsonwire.WithinIndex(err, i)
		}
	}
	if err := d.Err(); err != nil {
		return err
	}
	*p = items
	return nil
}

func stringItem(p *string, s *state) error { return decodeString(s, p) }

type (
	fs  = tableField[BenchNodeStatus]
	fc  = tableField[NodeCondition]
	fa  = tableField[NodeAddress]
	fi  = tableField[NodeSystemInfo]
	bns = BenchNodeStatus
	nc  = NodeCondition
	na  = NodeAddress
	nsi = NodeSystemInfo
)

var (
	benchNodeStatusTable = newTable(
		fs{"nodeName", true, func(m *bns, s *state) error { return decodeString(s, &m.NodeName) }},
		fs{"conditions", true, func(m *bns, s *state) error { return decodeSlice(s, &m.Conditions, decodeNodeCondition) }},
		fs{"capacity", true, func(m *bns, s *state) error { return m.Capacity.decodeJSON(&s.d) }},
		fs{"allocatable", true, func(m *bns, s *state) error { return m.Allocatable.decodeJSON(&s.d) }},
		fs{"addresses", true, func(m *bns, s *state) error { return decodeSlice(s, &m.Addresses, decodeNodeAddress) }},
		fs{"nodeInfo", true, func(m *bns, s *state) error { return decodeNodeSystemInfo(&m.NodeInfo, s) }},
		fs{"images", true, func(m *bns, s *state) error { return decodeSlice(s, &m.Images, stringItem) }},
	)
	nodeConditionTable = newTable(
		fc{"type", true, func(m *nc, s *state) error { return m.Type.decodeJSON(&s.d) }},
		fc{"status", true, func(m *nc, s *state) error { return m.Status.decodeJSON(&s.d) }},
		fc{"reason", false, func(m *nc, s *state) error { return decodeOptString(s, &m.Reason) }},
		fc{"message", false, func(m *nc, s *state) error { return decodeOptString(s, &m.Message) }},
		fc{"lastHeartbeatTime", false, func(m *nc, s *state) error { return decodeOptDateTime(s, &m.LastHeartbeatTime) }},
	)
	nodeAddressTable = newTable(
		fa{"type", true, func(m *na, s *state) error { return m.Type.decodeJSON(&s.d) }},
		fa{"address", true, func(m *na, s *state) error { return decodeString(s, &m.Address) }},
	)
	nodeSystemInfoTable = newTable(
		fi{"machineID", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.MachineID) }},
		fi{"systemUUID", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.SystemUUID) }},
		fi{"bootID", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.BootID) }},
		fi{"kernelVersion", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.KernelVersion) }},
		fi{"osImage", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.OSImage) }},
		fi{"containerRuntimeVersion", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.ContainerRuntimeVersion) }},
		fi{"kubeletVersion", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.KubeletVersion) }},
		fi{"kubeProxyVersion", false, func(m *nsi, s *state) error { return decodeOptString(s, &m.KubeProxyVersion) }},
	)
)

func decodeNodeCondition(m *NodeCondition, s *state) error {
	return decodeTable(s, m, nodeConditionTable)
}

func decodeNodeAddress(m *NodeAddress, s *state) error { return decodeTable(s, m, nodeAddressTable) }

func decodeNodeSystemInfo(m *NodeSystemInfo, s *state) error {
	return decodeTable(s, m, nodeSystemInfoTable)
}

// tableNodeStatus is BenchNodeStatus decoded by the table-driven decoder;
// its checks are the generated ones.
type tableNodeStatus BenchNodeStatus

func (m *tableNodeStatus) UnmarshalJSON(data []byte) error {
	s := &state{d: jsonwire.NewDecoder(data)}
	if err := decodeTable(s, (*BenchNodeStatus)(m), benchNodeStatusTable); err != nil {
		return err
	}
	return s.d.End()
}

func (m *tableNodeStatus) Validate() error { return (*BenchNodeStatus)(m).Validate() }

// tableNodeStatus has BenchNodeStatus's fields and tags, so encoding/json
// encodes both alike.

// TestTableDecoderAgrees keeps the measurement honest: on the benchmark
// message and on mutants of it, the table-driven decoder accepts what the
// generated decoder accepts, builds the same value and fails with the same
// error.
func TestTableDecoderAgrees(t *testing.T) {
	raw, err := os.ReadFile("testdata/nodestatus.json")
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{string(raw), `{}`, `null`, `[]`, `{"nodeName": 1}`,
		`{"nodeName":"n","conditions":null,"capacity":null,"allocatable":{},"addresses":[],"nodeInfo":{},"images":[]}`,
		`{"nodeName":"n","conditions":[{"type":"Ready","status":"True","reason":null}],"capacity":{},"allocatable":{},"addresses":[],"nodeInfo":{},"images":[]}`,
		`{"nodeName":"n","conditions":[{"type":"Ready"}],"capacity":{},"allocatable":{},"addresses":[],"nodeInfo":{},"images":[]}`,
		`{"nodeName":"n","conditions":[],"capacity":{},"allocatable":{},"addresses":[{"type":"Nope","address":"a"}],"nodeInfo":{},"images":[]}`,
		`{"nodeName":"n","conditions":[],"capacity":{},"allocatable":{},"addresses":[],"nodeInfo":{"bootID":"b"},"images":["x", 2]}`,
		`{"nodeName":"n","extra":true}`,
		`{"nodeName":"n","conditions":[],"capacity":{},"allocatable":{},"addresses":[],"nodeInfo":{},"images":[]} x`,
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		without := map[string]any{}
		for k2, v := range m {
			if k2 != k {
				without[k2] = v
			}
		}
		b, _ := json.Marshal(without)
		inputs = append(inputs, string(b))
		for _, v := range []any{nil, 1.5, "s", []any{map[string]any{}}, map[string]any{"type": "InternalIP"}} {
			with := map[string]any{}
			for k2, v2 := range m {
				with[k2] = v2
			}
			with[k] = v
			b, _ := json.Marshal(with)
			inputs = append(inputs, string(b))
		}
	}
	for _, in := range inputs {
		var gen BenchNodeStatus
		var tab tableNodeStatus
		errGen := gen.UnmarshalJSON([]byte(in))
		errTab := tab.UnmarshalJSON([]byte(in))
		if (errGen == nil) != (errTab == nil) || errGen != nil && errGen.Error() != errTab.Error() {
			t.Errorf("%s:\n  generated: %v\n  table:     %v", in, errGen, errTab)
			continue
		}
		if errGen == nil && !reflect.DeepEqual(gen, BenchNodeStatus(tab)) {
			t.Errorf("%s: decoded differently:\n  generated: %+v\n  table:     %+v", in, gen, tab)
		}
	}
}

// BenchmarkDecoderShape measures the table-driven decoder against the
// generated one, side by side in each iteration: on P8 (decode + Validate,
// beside decode-to-any + jsonschema/v5) and on decoding alone, which is
// what each watcher of a fan-out does with every change.
func BenchmarkDecoderShape(b *testing.B) {
	data, schema := benchMessage(b)
	b.Run("P8", func(b *testing.B) {
		var generated, tabled, reference time.Duration
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
			var tm tableNodeStatus
			if err := tm.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
			if err := tm.Validate(); err != nil {
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
			generated += t1.Sub(t0)
			tabled += t2.Sub(t1)
			reference += time.Since(t2)
		}
		n := float64(b.N)
		b.ReportMetric(float64(generated.Nanoseconds())/n, "per-field-ns/op")
		b.ReportMetric(float64(tabled.Nanoseconds())/n, "table-ns/op")
		b.ReportMetric(float64(reference.Nanoseconds())/n, "jsonschema-ns/op")
		b.ReportMetric(float64(reference)/float64(generated), "per-field-speedup")
		b.ReportMetric(float64(reference)/float64(tabled), "table-speedup")
	})
	b.Run("decode", func(b *testing.B) {
		var generated, tabled time.Duration
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			var m BenchNodeStatus
			if err := m.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			var tm tableNodeStatus
			if err := tm.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
			generated += t1.Sub(t0)
			tabled += time.Since(t1)
		}
		n := float64(b.N)
		b.ReportMetric(float64(generated.Nanoseconds())/n, "per-field-ns/op")
		b.ReportMetric(float64(tabled.Nanoseconds())/n, "table-ns/op")
		b.ReportMetric(float64(tabled)/float64(generated), "table/per-field")
	})
	for _, shape := range []string{"decode/per-field", "decode/table"} {
		b.Run(shape, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var err error
				if shape == "decode/per-field" {
					var m BenchNodeStatus
					err = m.UnmarshalJSON(data)
				} else {
					var m tableNodeStatus
					err = m.UnmarshalJSON(data)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnaryDecoderShape measures the process CPU of one unary call of
// the benchmark message (client and server in this process, over HTTP on
// 127.0.0.1), with the request decoded per field or by the table: the
// server's handler is registered for each request type in turn, and the
// two alternate in rounds of 100 calls, each first in every other round,
// so load on the machine falls on both alike.
func BenchmarkUnaryDecoderShape(b *testing.B) {
	data, _ := benchMessage(b)
	var perField BenchNodeStatus
	if err := perField.UnmarshalJSON(data); err != nil {
		b.Fatal(err)
	}
	tabled := tableNodeStatus(perField)
	ack := &Ack{Accepted: true}
	start := func(register func(*framework.Server)) *framework.Client {
		srv := frameworktest.StartServer(b, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"}, register)
		return frameworktest.NewClient(b, Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}})
	}
	// The other methods are served by the generated handlers; only
	// ReportBench's request type differs between the two servers.
	others := func(s *framework.Server) {
		impl := &controller{nodes: map[string]*NodeStatus{}}
		framework.HandleUnary(s, Contract, MethodReportStatus, impl.ReportStatus)
		framework.HandleBatch(s, Contract, MethodReportPodStatuses, impl.ReportPodStatuses)
	}
	clPerField := start(func(s *framework.Server) {
		others(s)
		framework.HandleUnary(s, Contract, MethodReportBench, func(_ context.Context, req *BenchNodeStatus) (*Ack, error) { return ack, nil })
	})
	clTable := start(func(s *framework.Server) {
		others(s)
		framework.HandleUnary(s, Contract, MethodReportBench, func(_ context.Context, req *tableNodeStatus) (*Ack, error) { return ack, nil })
	})
	ctx := context.Background()
	callPerField := func() error {
		_, err := framework.CallUnary[BenchNodeStatus, Ack](ctx, clPerField, MethodReportBench, &perField)
		return err
	}
	callTable := func() error {
		_, err := framework.CallUnary[tableNodeStatus, Ack](ctx, clTable, MethodReportBench, &tabled)
		return err
	}
	for _, call := range []func() error{callPerField, callTable} {
		for range 200 { // warm connections and pools
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	}
	const round = 100
	var cpuPerField, cpuTable time.Duration
	calls := 0
	type shape struct {
		call func() error
		cpu  *time.Duration
	}
	order := []shape{{callPerField, &cpuPerField}, {callTable, &cpuTable}}
	for b.Loop() {
		order[0], order[1] = order[1], order[0] // neither always goes first
		for _, c := range order {
			before := processCPU(b)
			for range round {
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
			*c.cpu += processCPU(b) - before
		}
		calls += round
	}
	b.ReportMetric(float64(cpuPerField.Nanoseconds())/float64(calls)/1000, "per-field-cpu-µs/call")
	b.ReportMetric(float64(cpuTable.Nanoseconds())/float64(calls)/1000, "table-cpu-µs/call")
	b.ReportMetric(float64(cpuTable)/float64(cpuPerField), "table/per-field")
}

// processCPU is the user plus system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
