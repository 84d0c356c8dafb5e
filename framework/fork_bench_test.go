package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// BenchmarkForkOverhead measures what fork mode costs: calls at 1.0.0
// against a server at 2.0.0 that converts them (validated against the old
// schema, converted up, handled, converted down), and calls by a 2.0.0 client
// converting down for a 1.0.0 server, each beside native 2.0.0 calls in the
// same run, alternating rounds. It reports CPU per call (process user+system,
// client and server together) and the overhead over native 2.0.0 (target: at
// most 15% more CPU per call), and, to isolate the conversion from the
// versions' different message sizes, over the same 1.0.0 call served natively.
func BenchmarkForkOverhead(b *testing.B) {
	const callers, rounds = 16, 5
	forked := startNodeinfoBench(b, true)
	oldServer := startNodeinfoBench(b, false)
	cfg := func(url string) framework.ClientConfig {
		return framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{url}}
	}
	native := frameworktest.NewClient(b, nodeinfoV2, cfg(forked))
	oldClient := frameworktest.NewClient(b, nodeinfoV1, cfg(forked))
	forkCfg := cfg(oldServer)
	forkCfg.Fork = []framework.Fork{forkV1}
	convertingClient := frameworktest.NewClient(b, nodeinfoV2, forkCfg)
	nativeOld := frameworktest.NewClient(b, nodeinfoV1, cfg(oldServer))

	ctx := context.Background()
	v2req := ready("node-1")
	v1req := &StatusV1{Node: "node-1", Ready: true}
	variants := []struct {
		name string
		call func(int) error
	}{
		{"native-2.0.0", func(int) error {
			_, err := framework.CallUnary[StatusV2, AckV2](ctx, native, "Report", v2req)
			return err
		}},
		{"server-converts-1.0.0", func(int) error {
			_, err := framework.CallUnary[StatusV1, AckV1](ctx, oldClient, "Report", v1req)
			return err
		}},
		{"client-converts-to-1.0.0", func(int) error {
			_, err := framework.CallUnary[StatusV2, AckV2](ctx, convertingClient, "Report", v2req)
			return err
		}},
		{"native-1.0.0", func(int) error {
			_, err := framework.CallUnary[StatusV1, AckV1](ctx, nativeOld, "Report", v1req)
			return err
		}},
	}
	for _, v := range variants { // warm up connections and sessions
		if r := benchrun.Run(4*callers, callers, v.call); r.Err() != nil {
			b.Fatal(v.name, r.Err())
		}
	}
	perRound := max(b.N/rounds, 200)
	cpu := make([]time.Duration, len(variants))
	calls := make([]int, len(variants))
	b.ResetTimer()
	for round := 0; round < rounds; round++ {
		for i, v := range variants {
			r := benchrun.Run(perRound, callers, v.call)
			if r.Err() != nil {
				b.Fatal(v.name, r.Err())
			}
			cpu[i] += r.CPU
			calls[i] += r.Calls
		}
	}
	b.StopTimer()
	per := func(i int) float64 { return float64(cpu[i].Microseconds()) / float64(calls[i]) }
	b.ReportMetric(per(0), "native-cpu-us/call")
	b.ReportMetric(per(1), "server-convert-cpu-us/call")
	b.ReportMetric(per(2), "client-convert-cpu-us/call")
	b.ReportMetric(100*(per(1)/per(0)-1), "server-convert-overhead-%")
	b.ReportMetric(100*(per(2)/per(0)-1), "client-convert-overhead-%")
	// The same 1.0.0 call served without conversion isolates the
	// conversion's own cost from the difference in message size.
	b.ReportMetric(per(3), "native-1.0.0-cpu-us/call")
	b.ReportMetric(100*(per(1)/per(3)-1), "server-convert-vs-native-1.0.0-%")
}

// startNodeinfoBench starts a nodeinfo server at 2.0.0 forked to 1.0.0, or
// at 1.0.0 only, and returns its URL.
func startNodeinfoBench(b *testing.B, v2 bool) string {
	b.Helper()
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0"}
	return frameworktest.StartServer(b, cfg, func(srv *framework.Server) {
		if v2 {
			h := func(_ context.Context, st *StatusV2) (*AckV2, error) { return &AckV2{Accepted: true}, nil }
			framework.HandleUnary(srv, nodeinfoV2, "Report", h)
			framework.HandleUnary(srv, nodeinfoV2, "Describe", h)
			framework.HandleBatch(srv, nodeinfoV2, "ReportMany", h)
			framework.ForkUnary(srv, nodeinfoV1, nodeinfoV2, "Report", statusV1ToV2, ackV2ToV1)
			framework.ForkBatch(srv, nodeinfoV1, nodeinfoV2, "ReportMany", statusV1ToV2, ackV2ToV1)
			framework.HandleUnary(srv, nodeinfoV1, "OnlyInOldV1", func(context.Context, *StatusV1) (*AckV1, error) { return &AckV1{}, nil })
			return
		}
		h := func(_ context.Context, st *StatusV1) (*AckV1, error) { return &AckV1{OK: st.Ready}, nil }
		framework.HandleUnary(srv, nodeinfoV1, "Report", h)
		framework.HandleUnary(srv, nodeinfoV1, "OnlyInOldV1", h)
		framework.HandleBatch(srv, nodeinfoV1, "ReportMany", h)
	}).URL
}
