package suite

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
)

type unaryVariant struct {
	name string
	call func(ctx context.Context, i int) error
}

// Unary measures NodeStatus→Ack calls at 1 and 64 callers: lockstep's
// default client (which batches automatically), the same with
// auto-batching off, and an N-1 client of a fork-mode server, beside gRPC with protobuf and with JSON, net/http with
// encoding/json, and connect-go with JSON and protobuf; and, as second
// rows, lockstep, gRPC+protobuf and net/http with mutual TLS on both
// sides. Each round runs every variant for the same time, one after the
// other; every server starts once and serves every round.
func (s *Suite) Unary() (err error) {
	msgs := newMessages(64)
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			err = errors.Join(err, closers[i]())
		}
	}()

	ls, err := startLockstep("127.0.0.1:0", serverConfig(), nil)
	if err != nil {
		return err
	}
	closers = append(closers, func() error { return ls.stop(true) })
	newClient := func(c *framework.Contract, mod func(*framework.ClientConfig)) (*framework.Client, error) {
		cl, err := lockstepClient(c, ls.URL(), mod)
		if err == nil {
			closers = append(closers, cl.Close)
		}
		return cl, err
	}
	plain, err := newClient(benchgen.Contract, nil)
	if err != nil {
		return err
	}
	unbatched, err := newClient(benchgen.Contract, func(c *framework.ClientConfig) { c.AutoBatch = &framework.AutoBatch{Disabled: true} })
	if err != nil {
		return err
	}
	forked, err := newClient(forkContract, nil)
	if err != nil {
		return err
	}
	// The transport levers: HTTP/2 without TLS over 1 and 4 connections,
	// each call in a request of its own.
	h2c1, h2c4 := newH2CPool(1), newH2CPool(4)
	closers = append(closers, func() error { h2c1.CloseIdleConnections(); h2c4.CloseIdleConnections(); return nil })
	overH2C1, err := newClient(benchgen.Contract, func(c *framework.ClientConfig) { c.Transport, c.AutoBatch = h2c1, &framework.AutoBatch{Disabled: true} })
	if err != nil {
		return err
	}
	overH2C4, err := newClient(benchgen.Contract, func(c *framework.ClientConfig) { c.Transport, c.AutoBatch = h2c4, &framework.AutoBatch{Disabled: true} })
	if err != nil {
		return err
	}

	g, err := startGRPC("127.0.0.1:0")
	if err != nil {
		return err
	}
	closers = append(closers, g.stop)
	conn, err := grpcConn(g.addr)
	if err != nil {
		return err
	}
	closers = append(closers, conn.Close)
	gc := benchpb.NewNodeControllerClient(conn)

	nh, err := startHTTP(netHTTPHandler(), nil)
	if err != nil {
		return err
	}
	closers = append(closers, nh.stop)
	hc := httpClient()
	closers = append(closers, func() error { hc.CloseIdleConnections(); return nil })

	ch, err := startHTTP(connectHandler(), nil)
	if err != nil {
		return err
	}
	closers = append(closers, ch.stop)
	chc := httpClient()
	closers = append(closers, func() error { chc.CloseIdleConnections(); return nil })
	connectProto := connect.NewClient[benchpb.NodeStatus, benchpb.Ack](chc, ch.base+connectProcedure)
	connectJSON := connect.NewClient[benchpb.NodeStatus, benchpb.Ack](chc, ch.base+connectProcedure, connect.WithProtoJSON())

	// The second rows: the same three systems with mutual TLS.
	tr, err := newTrust()
	if err != nil {
		return err
	}
	closers = append(closers, tr.close)
	lsTLS, err := startLockstep("127.0.0.1:0", tr.serverConfig(), nil)
	if err != nil {
		return err
	}
	closers = append(closers, func() error { return lsTLS.stop(true) })
	plainTLS, err := lockstepClient(benchgen.Contract, lsTLS.URL(), tr.lockstepClient)
	if err != nil {
		return err
	}
	closers = append(closers, plainTLS.Close)
	gTLS, err := startGRPC("127.0.0.1:0", tr.grpcServerOption())
	if err != nil {
		return err
	}
	closers = append(closers, gTLS.stop)
	connTLS, err := grpcConn(gTLS.addr, tr.grpcDialOption())
	if err != nil {
		return err
	}
	closers = append(closers, connTLS.Close)
	gcTLS := benchpb.NewNodeControllerClient(connTLS)
	nhTLS, err := startHTTP(netHTTPHandler(), tr.serverTLS)
	if err != nil {
		return err
	}
	closers = append(closers, nhTLS.stop)
	hcTLS := tr.httpClient()
	closers = append(closers, func() error { hcTLS.CloseIdleConnections(); return nil })
	if err := tr.refusesAnonymous(lsTLS.URL(), gTLS.addr, strings.TrimPrefix(nhTLS.base, "https://")); err != nil {
		return err
	}

	generated := benchgen.NewClient(plain)
	generatedTLS := benchgen.NewClient(plainTLS)
	generatedUnbatched := benchgen.NewClient(unbatched)
	generatedH2C1, generatedH2C4 := benchgen.NewClient(overH2C1), benchgen.NewClient(overH2C4)
	variants := []unaryVariant{
		{results.VLockstep, func(ctx context.Context, i int) error {
			ack, err := generated.ReportStatus(ctx, msgs.generated[i%len(msgs.generated)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VLockstepUnbatched, func(ctx context.Context, i int) error {
			ack, err := generatedUnbatched.ReportStatus(ctx, msgs.generated[i%len(msgs.generated)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VLockstepH2C1, func(ctx context.Context, i int) error {
			ack, err := generatedH2C1.ReportStatus(ctx, msgs.generated[i%len(msgs.generated)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VLockstepH2C4, func(ctx context.Context, i int) error {
			ack, err := generatedH2C4.ReportStatus(ctx, msgs.generated[i%len(msgs.generated)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VLockstepFork, func(ctx context.Context, i int) error {
			ack, err := framework.CallUnary[benchgen.NodeStatus, benchgen.Ack](ctx, forked, benchgen.MethodReportStatus,
				msgs.generated[i%len(msgs.generated)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VGRPCProto, func(ctx context.Context, i int) error {
			ack, err := gc.ReportStatus(ctx, msgs.proto[i%len(msgs.proto)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VGRPCJSON, func(ctx context.Context, i int) error {
			var ack struct{ Accepted bool }
			err := conn.Invoke(ctx, jsonReportStatus, msgs.plain[i%len(msgs.plain)], &ack, grpc.CallContentSubtype("json"))
			return checkAck(ack.Accepted, err)
		}},
		{results.VNetHTTP, func(ctx context.Context, i int) error {
			return netHTTPCall(ctx, hc, nh.base+"/nodestatus", msgs.plain[i%len(msgs.plain)])
		}},
		{results.VConnectJSON, func(ctx context.Context, i int) error {
			resp, err := connectJSON.CallUnary(ctx, connect.NewRequest(msgs.proto[i%len(msgs.proto)]))
			return checkAck(err == nil && resp.Msg.Accepted, err)
		}},
		{results.VConnectProto, func(ctx context.Context, i int) error {
			resp, err := connectProto.CallUnary(ctx, connect.NewRequest(msgs.proto[i%len(msgs.proto)]))
			return checkAck(err == nil && resp.Msg.Accepted, err)
		}},
		{results.VLockstepMTLS, func(ctx context.Context, i int) error {
			ack, err := generatedTLS.ReportStatus(ctx, msgs.generated[i%len(msgs.generated)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VGRPCProtoMTLS, func(ctx context.Context, i int) error {
			ack, err := gcTLS.ReportStatus(ctx, msgs.proto[i%len(msgs.proto)])
			return checkAck(err == nil && ack.Accepted, err)
		}},
		{results.VNetHTTPMTLS, func(ctx context.Context, i int) error {
			return netHTTPCall(ctx, hcTLS, nhTLS.base+"/nodestatus", msgs.plain[i%len(msgs.plain)])
		}},
	}

	limit := results.LengthsOf(s.cfg.Quick).UnaryRound
	const maxCalls = 2_000_000
	for _, callers := range results.UnaryCallers {
		workload := results.UnaryWorkload(callers)
		for _, v := range variants { // open every variant's connections first
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r := benchrun.Run(8*callers, callers, func(i int) error { return v.call(ctx, i) })
			cancel()
			if r.Err() != nil {
				return fmt.Errorf("%s, %s: warm-up: %w", workload, v.name, r.Err())
			}
		}
		for round := range s.cfg.Rounds {
			// Rotate the order each round, so no variant always runs
			// right after the same neighbour.
			for k := range variants {
				v := variants[(k+round)%len(variants)]
				if err := s.round(workload, v.name, func() (results.Round, error) {
					ctx, cancel := context.WithTimeout(context.Background(), limit+30*time.Second)
					defer cancel()
					r := benchrun.RunFor(limit, maxCalls, callers, func(i int) error { return v.call(ctx, i) })
					return results.Round{Latencies: r.Latencies, Metrics: map[string]float64{
						results.MCallsPerSec: r.PerSecond(),
						results.MP50:         float64(r.Percentile(0.5)) / 1e3,
						results.MP99:         float64(r.Percentile(0.99)) / 1e3,
						results.MCPUPerCall:  float64(r.CPUPerCall()) / 1e3,
						results.MFailed:      float64(r.Failed),
					}}, nil
				}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
