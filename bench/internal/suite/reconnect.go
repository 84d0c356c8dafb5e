package suite

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
)

// Reconnect measures P6 as an upgrade sees it: a server is killed, a
// client call is made once the client knows and blocks, the address stays
// dark for a random time, then a compatible server starts listening there;
// the gap is from that listener accepting to the blocked call's success.
// Pairs of server and client run in parallel to gather enough samples.
// The mutual-TLS variants run the same trials with both sides
// authenticated, configured as a user would (trust).
func (s *Suite) Reconnect() (err error) {
	tr, err := newTrust()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tr.close()) }()
	// One trial per pair and twice the pairs of two trials each: the
	// same samples in half the wall time, a round lasting about the
	// longest dark time.
	l := results.LengthsOf(s.cfg.Quick)
	pairs, trials := l.ReconnectPairs, l.ReconnectTrials
	dark := func(r *rand.Rand) time.Duration {
		// P6 holds for any dark time from 0.2 to 10 s.
		lo, hi := 200*time.Millisecond, l.ReconnectDark
		return lo + time.Duration(r.Int64N(int64(hi-lo)))
	}
	for round := range s.cfg.Rounds {
		for _, v := range []string{results.VReconnectLS, results.VReconnectGR, results.VReconnectLSMTLS, results.VReconnectGRMTLS} {
			var vtr *trust
			if results.PlaintextOf[v] != "" {
				vtr = tr
			}
			if err := s.round(results.WReconnect, v, func() (results.Round, error) {
				var mu sync.Mutex
				var gaps []time.Duration
				var errs []error
				var wg sync.WaitGroup
				for p := range pairs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(uint64(round), uint64(p)))
						got, err := reconnectPair(v, vtr, trials, func() time.Duration { return dark(r) })
						mu.Lock()
						defer mu.Unlock()
						gaps = append(gaps, got...)
						if err != nil {
							errs = append(errs, err)
						}
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					return results.Round{}, err
				}
				return durationRound(gaps), nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// reconnectPair runs trials of one pair of variant's server and client,
// with mutual TLS when tr is not nil.
func reconnectPair(variant string, tr *trust, trials int, dark func() time.Duration) ([]time.Duration, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// The variant's configuration: plaintext, or mutual TLS on both sides.
	lsConfig, lsURL, lsClient := serverConfig, "http://"+addr, (func(*framework.ClientConfig))(nil)
	var grpcServer []grpc.ServerOption
	var grpcDial []grpc.DialOption
	if tr != nil {
		lsConfig, lsURL, lsClient = tr.serverConfig, "https://"+addr, tr.lockstepClient
		grpcServer, grpcDial = []grpc.ServerOption{tr.grpcServerOption()}, []grpc.DialOption{tr.grpcDialOption()}
	}
	var gaps []time.Duration
	const limit = 15 * time.Second
	switch variant {
	case results.VReconnectLS, results.VReconnectLSMTLS:
		srv, err := startLockstep(addr, lsConfig(), nil)
		if err != nil {
			return nil, err
		}
		defer func() { _ = srv.stop(true) }()
		cl, err := lockstepClient(benchgen.Contract, lsURL, lsClient)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		client := benchgen.NewClient(cl)
		node := toGenerated(stamped(0, time.Now()))
		for range trials {
			d := dark()
			if err := srv.stop(true); err != nil {
				return nil, err
			}
			stopped := time.Now()
			// The call is made once the client knows, so it blocks instead
			// of racing the stop on a pooled connection.
			for cl.Ready() == nil {
				if time.Since(stopped) > limit {
					return nil, fmt.Errorf("the lockstep client still routes to a stopped server after %v", limit)
				}
				time.Sleep(time.Millisecond)
			}
			done := make(chan error, 1)
			var end time.Time
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), limit+d)
				defer cancel()
				_, err := client.ReportStatus(ctx, node)
				end = time.Now()
				done <- err
			}()
			time.Sleep(d - time.Since(stopped))
			if srv, err = startLockstep(addr, lsConfig(), nil); err != nil {
				return nil, err
			}
			listening := time.Now()
			if err := <-done; err != nil {
				return nil, fmt.Errorf("the blocked lockstep call failed: %w", err)
			}
			gaps = append(gaps, max(end.Sub(listening), 0))
		}
	default:
		g, err := startGRPC(addr, grpcServer...)
		if err != nil {
			return nil, err
		}
		defer func() { _ = g.stop() }()
		conn, err := grpcConn(addr, grpcDial...)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		gc := benchpb.NewNodeControllerClient(conn)
		ping := &benchpb.Ping{Session: "reconnect"}
		if _, err := gc.Heartbeat(context.Background(), ping, grpc.WaitForReady(true)); err != nil {
			return nil, err
		}
		for range trials {
			d := dark()
			if err := g.stop(); err != nil {
				return nil, err
			}
			stopped := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			for conn.GetState() == connectivity.Ready {
				if !conn.WaitForStateChange(ctx, connectivity.Ready) {
					cancel()
					return nil, errors.New("the gRPC connection stayed READY after its server stopped")
				}
			}
			cancel()
			done := make(chan error, 1)
			var end time.Time
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), limit+d+2*time.Minute)
				defer cancel()
				_, err := gc.Heartbeat(ctx, ping, grpc.WaitForReady(true))
				end = time.Now()
				done <- err
			}()
			time.Sleep(d - time.Since(stopped))
			if g, err = startGRPC(addr, grpcServer...); err != nil {
				return nil, err
			}
			listening := time.Now()
			if err := <-done; err != nil {
				return nil, fmt.Errorf("the blocked gRPC call failed: %w", err)
			}
			gaps = append(gaps, max(end.Sub(listening), 0))
		}
	}
	return gaps, nil
}
