package framework_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// generatedNodes are the benchmark requests as generated types: the same
// bytes on the wire as benchNodes.
var generatedNodes = func() []*benchgen.NodeStatus {
	nodes := make([]*benchgen.NodeStatus, len(benchNodes))
	for i, n := range benchNodes {
		raw, err := json.Marshal(n)
		if err != nil {
			panic(err)
		}
		nodes[i] = new(benchgen.NodeStatus)
		if err := json.Unmarshal(raw, nodes[i]); err != nil {
			panic(err)
		}
	}
	return nodes
}()

// BenchmarkUnaryGenerated compares unary NodeStatus→Ack calls with the
// generated contract package (strict generated decoding and Validate, as
// users run it) beside the net/http + encoding/json anchor, at 1 and 64
// callers, with automatic batching (the default) and without. Variants alternate within
// one run; repeat whole runs for medians.
func BenchmarkUnaryGenerated(b *testing.B) {
	var generation atomic.Int64
	srv := frameworktest.StartServer(b, benchServerConfig(), func(s *framework.Server) {
		benchgen.Register(s, ackServer{&generation})
	})
	client := func(auto *framework.AutoBatch) benchgen.Client {
		cl := frameworktest.NewClient(b, benchgen.Contract, framework.ClientConfig{
			Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}, AutoBatch: auto})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
		return benchgen.NewClient(cl)
	}
	plain, unbatched := client(nil), client(&framework.AutoBatch{Disabled: true})
	a := startAnchor(b)
	bg := context.Background()
	call := func(c benchgen.Client) func(int) error {
		return func(i int) error {
			ack, err := c.ReportStatus(bg, generatedNodes[i%len(generatedNodes)])
			if err == nil && !ack.Accepted {
				err = errors.New("ack not accepted")
			}
			return err
		}
	}
	variants := []struct {
		name string
		call func(i int) error
	}{
		{"lockstep-generated", call(plain)},
		{"lockstep-generated-nobatch", call(unbatched)},
		{"nethttp", func(i int) error { return a.call(bg, i) }},
	}
	for _, callers := range []int{1, 64} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/callers=%d", v.name, callers), func(b *testing.B) { runUnary(b, callers, v.call) })
		}
	}
}

// ackServer answers every status with an Ack and a rising generation.
type ackServer struct{ generation *atomic.Int64 }

func (s ackServer) ReportStatus(context.Context, *benchgen.NodeStatus) (*benchgen.Ack, error) {
	return &benchgen.Ack{Accepted: true, Generation: s.generation.Add(1)}, nil
}

func (s ackServer) ReportStatuses(ctx context.Context, n *benchgen.NodeStatus) (*benchgen.Ack, error) {
	return s.ReportStatus(ctx, n)
}
