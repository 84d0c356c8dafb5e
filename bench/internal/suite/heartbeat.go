package suite

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
)

// heartbeatPeriod is the server's default heartbeat (SessionTTL 5 s / 5).
const heartbeatPeriod = time.Second

// Heartbeats measures P3 and the session half of P7. The lockstep server
// runs in a process of its own; another process holds the sessions (one
// client per simulated node sharing one transport and one Heartbeats), so
// each side's CPU and memory is its own. Each round then measures, one
// after the other: lockstep's server CPU per heartbeat while the sessions
// idle, a durable embedded-etcd Put per heartbeat (64 writers), and a gRPC
// unary ping per heartbeat (64 callers); the anchors' CPU is this
// process's (client and server).
func (s *Suite) Heartbeats() (err error) {
	sessions := pick(s, results.MaxSessions, 1000)
	window := pick(s, 5*time.Second, time.Second)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	srv, err := startChild(s.cfg.Self, "lockstep", addr, 0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.close()) }()
	empty, err := srv.memory("mem")
	if err != nil {
		return err
	}
	s.logf("opening %d sessions", sessions)
	clients, err := startChild(s.cfg.Self, "sessions", addr, sessions)
	if err != nil {
		return err
	}
	defer func() {
		if clients != nil {
			err = errors.Join(err, clients.close())
		}
	}()
	time.Sleep(2 * heartbeatPeriod) // every session has beaten at least once
	full, err := srv.memory("mem")
	if err != nil {
		return err
	}
	clientBase, err := clients.memory("membase")
	if err != nil {
		return err
	}
	clientFull, err := clients.memory("mem")
	if err != nil {
		return err
	}
	if err := s.round(results.WMemory, results.VMemSession, func() (results.Round, error) {
		return results.Round{Metrics: map[string]float64{
			results.MServerBytes: perItem(empty, full, sessions),
			results.MClientBytes: perItem(clientBase, clientFull, sessions),
			results.MItems:       float64(sessions),
		}}, nil
	}); err != nil {
		return err
	}

	// The second rows: the same sessions and server with mutual TLS, in
	// processes of their own, open beside the plaintext ones (their CPU
	// is each process's own; at 1 Hz they cost the host a few hundredths
	// of a core).
	tr, err := newTrust()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tr.close()) }()
	addrTLS, err := freeAddr()
	if err != nil {
		return err
	}
	srvTLS, err := startChildTLS(s.cfg.Self, "lockstep", addrTLS, 0, tr.dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srvTLS.close()) }()
	s.logf("opening %d sessions with mutual TLS", sessions)
	clientsTLS, err := startChildTLS(s.cfg.Self, "sessions", addrTLS, sessions, tr.dir)
	if err != nil {
		return err
	}
	defer func() {
		if clientsTLS != nil {
			err = errors.Join(err, clientsTLS.close())
		}
	}()
	time.Sleep(2 * heartbeatPeriod)

	etcd, err := startEtcd()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()
	ec, err := etcd.client()
	if err != nil {
		return err
	}
	defer ec.Close()
	g, err := startGRPC("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.stop()) }()
	conn, err := grpcConn(g.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	gc := benchpb.NewNodeControllerClient(conn)
	gTLS, err := startGRPC("127.0.0.1:0", tr.grpcServerOption())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, gTLS.stop()) }()
	connTLS, err := grpcConn(gTLS.addr, tr.grpcDialOption())
	if err != nil {
		return err
	}
	defer connTLS.Close()
	gcTLS := benchpb.NewNodeControllerClient(connTLS)
	lease := []byte(`{"holderIdentity":"node-0000","leaseDurationSeconds":40,"renewTime":"2026-12-01T10:00:00.000000Z"}`)
	var beat atomic.Int64
	anchors := map[string]func(ctx context.Context, i int) error{
		results.VBeatEtcd: func(ctx context.Context, i int) error {
			_, err := ec.Put(ctx, fmt.Sprintf("/leases/node-%05d", i%sessions), string(lease))
			return err
		},
		results.VBeatGRPC: func(ctx context.Context, i int) error {
			_, err := gc.Heartbeat(ctx, &benchpb.Ping{Session: strconv.Itoa(i % sessions)})
			return err
		},
		results.VBeatGRPCMTLS: func(ctx context.Context, i int) error {
			_, err := gcTLS.Heartbeat(ctx, &benchpb.Ping{Session: strconv.Itoa(i % sessions)})
			return err
		},
	}
	for name, call := range anchors { // connections open, etcd's first writes done
		r := benchrun.Run(256, 64, func(i int) error { return call(context.Background(), i) })
		if r.Err() != nil {
			return fmt.Errorf("%s warm-up: %w", name, r.Err())
		}
	}
	for range s.cfg.Rounds {
		for _, p := range []struct {
			variant     string
			srv, client *child
		}{{results.VBeatLockstep, srv, clients}, {results.VBeatLockstepMTLS, srvTLS, clientsTLS}} {
			if err := s.round(results.WHeartbeat, p.variant, func() (results.Round, error) {
				return beatRound(p.srv, p.client, sessions, window)
			}); err != nil {
				return err
			}
		}
		for _, name := range []string{results.VBeatEtcd, results.VBeatGRPC, results.VBeatGRPCMTLS} {
			call := anchors[name]
			if err := s.round(results.WHeartbeat, name, func() (results.Round, error) {
				ctx, cancel := context.WithTimeout(context.Background(), window+30*time.Second)
				defer cancel()
				r := benchrun.RunFor(window, 10_000_000, 64, func(i int) error { return call(ctx, int(beat.Add(1))) })
				if r.Err() != nil {
					return results.Round{}, r.Err()
				}
				perCall := float64(r.CPUPerCall()) / 1e3
				return results.Round{Latencies: r.Latencies, Metrics: map[string]float64{
					results.MTotalCPUPer: perCall, results.MServerCPUPer: perCall, results.MBeatsPerSec: r.PerSecond(),
					results.MP99: float64(r.Percentile(0.99)) / 1e3,
				}}, nil
			}); err != nil {
				return err
			}
		}
	}

	// Idle watchers (P7): the sessions go, 10,000 watchers come.
	if err := clients.close(); err != nil {
		return err
	}
	clients = nil
	if err := clientsTLS.close(); err != nil {
		return err
	}
	clientsTLS = nil
	time.Sleep(2 * heartbeatPeriod)
	before, err := srv.memory("mem")
	if err != nil {
		return err
	}
	watchers := pick(s, results.MaxWatchers, 1000)
	s.logf("opening %d watchers", watchers)
	wc, err := startChild(s.cfg.Self, "watchers", addr, watchers)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, wc.close()) }()
	after, err := srv.memory("mem")
	if err != nil {
		return err
	}
	wBase, err := wc.memory("membase")
	if err != nil {
		return err
	}
	wFull, err := wc.memory("mem")
	if err != nil {
		return err
	}
	return s.round(results.WMemory, results.VMemWatcher, func() (results.Round, error) {
		return results.Round{Metrics: map[string]float64{
			results.MServerBytes: perItem(before, after, watchers),
			results.MClientBytes: perItem(wBase, wFull, watchers),
			results.MItems:       float64(watchers),
		}}, nil
	})
}

// beatRound measures one heartbeat round: the CPU the server process and
// the process holding the sessions used over window, while the sessions
// idle, and that the server still holds every session.
func beatRound(srv, clients *child, sessions int, window time.Duration) (results.Round, error) {
	sc0, err := srv.cpu()
	if err != nil {
		return results.Round{}, err
	}
	cc0, err := clients.cpu()
	if err != nil {
		return results.Round{}, err
	}
	start := time.Now()
	time.Sleep(window)
	sc1, err := srv.cpu()
	if err != nil {
		return results.Round{}, err
	}
	cc1, err := clients.cpu()
	if err != nil {
		return results.Round{}, err
	}
	wall := time.Since(start)
	held, err := srv.ask("sessions")
	if err != nil {
		return results.Round{}, err
	}
	if held != strconv.Itoa(sessions) {
		return results.Round{}, fmt.Errorf("the server holds %s sessions, want %d: heartbeats did not keep them", held, sessions)
	}
	beats := float64(sessions) * wall.Seconds() / heartbeatPeriod.Seconds()
	return results.Round{Metrics: map[string]float64{
		results.MServerCPUPer: float64((sc1 - sc0).Nanoseconds()) / 1e3 / beats,
		results.MTotalCPUPer:  float64((sc1 - sc0 + cc1 - cc0).Nanoseconds()) / 1e3 / beats,
		results.MServerCores:  (sc1 - sc0).Seconds() / wall.Seconds(),
		results.MBeatsPerSec:  beats / wall.Seconds(),
		results.MSessions:     float64(sessions),
	}}, nil
}
