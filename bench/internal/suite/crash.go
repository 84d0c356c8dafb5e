package suite

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"net"
	"slices"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
)

// freeAddr returns a loopback address no one listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// Crash measures how long a client takes to notice that its server's
// process was killed (SIGKILL, so the kernel closes its connections):
// lockstep's client until it stops routing to the server (Client.Ready
// fails), gRPC's ClientConn until it leaves READY. The server runs in a
// process of its own, started anew for every trial.
func (s *Suite) Crash() error {
	trials := pick(s, 6, 2)
	for range s.cfg.Rounds {
		for _, v := range []string{results.VCrashLS, results.VCrashGRP} {
			if err := s.round(results.WCrash, v, func() (results.Round, error) {
				var lat []time.Duration
				for range trials {
					d, err := s.crashTrial(v)
					if err != nil {
						return results.Round{}, err
					}
					lat = append(lat, d)
				}
				return durationRound(lat), nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// durationRound summarises samples in milliseconds.
func durationRound(lat []time.Duration) results.Round {
	slices.Sort(lat)
	return results.Round{Latencies: lat, Metrics: map[string]float64{
		results.MP50ms:   float64(benchrun.Percentile(lat, 0.5)) / 1e6,
		results.MP99ms:   float64(benchrun.Percentile(lat, 0.99)) / 1e6,
		results.MMaxms:   float64(benchrun.Percentile(lat, 1)) / 1e6,
		results.MSamples: float64(len(lat)),
	}}
}

func (s *Suite) crashTrial(variant string) (time.Duration, error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	const limit = 10 * time.Second
	switch variant {
	case results.VCrashLS:
		c, err := startChild(s.cfg.Self, "lockstep", addr, 0)
		if err != nil {
			return 0, err
		}
		defer c.kill()
		cl, err := lockstepClient(benchgen.Contract, "http://"+addr, nil)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		// One call, so the client holds a pooled connection as a busy one
		// would.
		if _, err := benchgen.NewClient(cl).ReportStatus(context.Background(), toGenerated(stamped(0, time.Now()))); err != nil {
			return 0, err
		}
		killed := time.Now()
		c.kill()
		for cl.Ready() == nil {
			if time.Since(killed) > limit {
				return 0, fmt.Errorf("the lockstep client still routes to a killed server after %v", limit)
			}
			time.Sleep(time.Millisecond)
		}
		return time.Since(killed), nil
	default:
		c, err := startChild(s.cfg.Self, "grpc", addr, 0)
		if err != nil {
			return 0, err
		}
		defer c.kill()
		conn, err := grpcConn(addr)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		conn.Connect()
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		for st := conn.GetState(); st != connectivity.Ready; st = conn.GetState() {
			if !conn.WaitForStateChange(ctx, st) {
				return 0, errors.New("the gRPC connection did not become ready")
			}
		}
		killed := time.Now()
		c.kill()
		if !conn.WaitForStateChange(ctx, connectivity.Ready) {
			return 0, fmt.Errorf("the gRPC connection is still READY %v after its server was killed", limit)
		}
		return time.Since(killed), nil
	}
}
