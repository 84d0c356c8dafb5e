package suite

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/discovery"
)

// Reconnect measures P6 as an upgrade sees it: a server is killed, a
// client call is made once the client knows and blocks, the address stays
// dark for a random time, then a compatible server starts listening there;
// the gap is from that listener accepting to the blocked call's success.
// Pairs of server and client run in parallel to gather enough samples.
// The mutual-TLS variants run the same trials with both sides
// authenticated, configured as a user would (trust). The readiness row
// runs the plaintext trials with a source that announces the replacement
// once it listens (results.VReconnectLSReady).
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
		for _, v := range []string{results.VReconnectLS, results.VReconnectLSReady, results.VReconnectGR,
			results.VReconnectLSMTLS, results.VReconnectGRMTLS} {
			var vtr *trust
			if results.PlaintextOf[v] != "" {
				vtr = tr
			}
			if err := s.round(results.WReconnect, v, func() (results.Round, error) {
				var mu sync.Mutex
				var gaps []time.Duration
				var errs []error
				var dials dialCount
				var wg sync.WaitGroup
				for p := range pairs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(uint64(round), uint64(p)))
						got, n, err := reconnectPair(v, vtr, s.cfg.ReconnectClients, s.cfg.ReconnectBackoffMax, trials, func() time.Duration { return dark(r) })
						mu.Lock()
						defer mu.Unlock()
						gaps = append(gaps, got...)
						dials.dials, dials.dark = dials.dials+n.dials, dials.dark+n.dark
						if err != nil {
							errs = append(errs, err)
						}
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					return results.Round{}, err
				}
				round := durationRound(gaps)
				if dials.dark > 0 {
					round.Metrics[results.MDialsPerS] = float64(dials.dials) / dials.dark.Seconds()
				}
				return round, nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// dialCount is how many dials a client made to its server's address
// while nothing listened there, over how long that was.
type dialCount struct {
	dials int64
	dark  time.Duration
}

// refusedHandshakes counts a lockstep client's handshakes that found
// nothing listening: each is a dial of its own, beside the prober's.
type refusedHandshakes struct{ n atomic.Int64 }

func (r *refusedHandshakes) Handshake(_, _, outcome, _ string) {
	if outcome == "unreachable" {
		r.n.Add(1)
	}
}
func (*refusedHandshakes) Blocked(string, time.Duration)                              {}
func (*refusedHandshakes) Call(string, string, string, framework.Code, time.Duration) {}

// reconnectPair runs trials of one pair of variant's server and client,
// with mutual TLS when tr is not nil; a lockstep pair's process holds
// clients clients of the address, one of them making the blocked call,
// with Backoff.Max set to backoffMax when that is not zero. It counts the
// clients' dials of the address while it is dark: lockstep's through
// their refused handshakes and the process's prober of the address
// (framework.ProbeStats), gRPC's through its dialer. For the readiness variant the client's source is a
// discovery.Manual that says the endpoint is not ready as soon as the
// server is stopped and ready again as soon as its replacement listens:
// the quickest a readiness-driven source can be, so the gap it shows is
// the client's own; a real source adds its own delay (a readiness probe's
// period, an EndpointSlice's way to the informer).
func reconnectPair(variant string, tr *trust, clients int, backoffMax time.Duration, trials int, dark func() time.Duration) (gaps []time.Duration, n dialCount, err error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, n, err
	}
	// The variant's configuration: plaintext, or mutual TLS on both sides.
	lsConfig, lsURL, lsClient := serverConfig, "http://"+addr, (func(*framework.ClientConfig))(nil)
	var grpcServer []grpc.ServerOption
	var grpcDial []grpc.DialOption
	if tr != nil {
		lsConfig, lsURL, lsClient = tr.serverConfig, "https://"+addr, tr.lockstepClient
		grpcServer, grpcDial = []grpc.ServerOption{tr.grpcServerOption()}, []grpc.DialOption{tr.grpcDialOption()}
	}
	const limit = 15 * time.Second
	switch variant {
	case results.VReconnectLS, results.VReconnectLSReady, results.VReconnectLSMTLS:
		srv, err := startLockstep(addr, lsConfig(), nil)
		if err != nil {
			return nil, n, err
		}
		defer func() {
			if srv != nil { // nil when a replacement failed to start
				_ = srv.stop(true)
			}
		}()
		refused := &refusedHandshakes{}
		// ready says the endpoint is ready or not, for the readiness
		// variant; the others' sources know nothing of readiness.
		ready := func(bool) {}
		var source framework.EndpointSource
		if variant == results.VReconnectLSReady {
			m := discovery.NewManual(framework.EndpointReport{URL: lsURL})
			source, ready = m, func(r bool) { m.SetReady(lsURL, r) }
		}
		configure := func(c *framework.ClientConfig) {
			if lsClient != nil {
				lsClient(c)
			}
			c.Observer = refused
			c.Source = source
			c.Backoff.Max = backoffMax
		}
		cl, err := lockstepClient(benchgen.Contract, lsURL, configure)
		if err != nil {
			return nil, n, err
		}
		// The other clients of the address wait for it with the one
		// that calls; their refused handshakes count as dials too.
		for range clients - 1 {
			other, err := lockstepClient(benchgen.Contract, lsURL, configure)
			if err != nil {
				return nil, n, err
			}
			defer other.Close()
		}
		dialled := func() int64 {
			probed, _, _ := framework.ProbeStats(lsURL)
			return probed + refused.n.Load()
		}
		defer cl.Close()
		client := benchgen.NewClient(cl)
		node := toGenerated(stamped(0, time.Now()))
		for range trials {
			d := dark()
			if err := srv.stop(true); err != nil {
				return nil, n, err
			}
			ready(false)
			stopped, before := time.Now(), dialled()
			// The call is made once the client knows, so it blocks instead
			// of racing the stop on a pooled connection.
			for cl.Ready() == nil {
				if time.Since(stopped) > limit {
					return nil, n, fmt.Errorf("the lockstep client still routes to a stopped server after %v", limit)
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
			n.dials, n.dark = n.dials+dialled()-before, n.dark+time.Since(stopped)
			if srv, err = startLockstep(addr, lsConfig(), nil); err != nil {
				return nil, n, err
			}
			listening := time.Now()
			ready(true)
			if err := <-done; err != nil {
				return nil, n, fmt.Errorf("the blocked lockstep call failed: %w", err)
			}
			gaps = append(gaps, max(end.Sub(listening), 0))
		}
	default:
		g, err := startGRPC(addr, grpcServer...)
		if err != nil {
			return nil, n, err
		}
		defer func() {
			if g != nil { // nil when a replacement failed to start
				_ = g.stop()
			}
		}()
		var dials atomic.Int64
		if len(grpcDial) == 0 {
			grpcDial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		}
		conn, err := grpcConn(addr, append(grpcDial, grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, "tcp", a)
		}))...)
		if err != nil {
			return nil, n, err
		}
		defer conn.Close()
		gc := benchpb.NewNodeControllerClient(conn)
		ping := &benchpb.Ping{Session: "reconnect"}
		if _, err := gc.Heartbeat(context.Background(), ping, grpc.WaitForReady(true)); err != nil {
			return nil, n, err
		}
		for range trials {
			d := dark()
			if err := g.stop(); err != nil {
				return nil, n, err
			}
			stopped, before := time.Now(), dials.Load()
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			for conn.GetState() == connectivity.Ready {
				if !conn.WaitForStateChange(ctx, connectivity.Ready) {
					cancel()
					return nil, n, errors.New("the gRPC connection stayed READY after its server stopped")
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
			n.dials, n.dark = n.dials+dials.Load()-before, n.dark+time.Since(stopped)
			if g, err = startGRPC(addr, grpcServer...); err != nil {
				return nil, n, err
			}
			listening := time.Now()
			if err := <-done; err != nil {
				return nil, n, fmt.Errorf("the blocked gRPC call failed: %w", err)
			}
			gaps = append(gaps, max(end.Sub(listening), 0))
		}
	}
	return gaps, n, nil
}
