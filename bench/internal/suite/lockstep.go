package suite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
)

// forkContract is the benchmark contract one version back (0.9.0, the same
// messages): the fork-mode variant's client speaks it to a server at
// 1.0.0 that keeps serving it by converting every call up and back.
var forkContract = func() *framework.Contract {
	m := benchgen.Contract.Model()
	m.Version = "0.9.0"
	return framework.MustContract(m)
}()

// ackServer answers every status with an Ack and a rising generation.
type ackServer struct{ generation atomic.Int64 }

func (s *ackServer) ReportStatus(context.Context, *benchgen.NodeStatus) (*benchgen.Ack, error) {
	return &benchgen.Ack{Accepted: true, Generation: s.generation.Add(1)}, nil
}

func (s *ackServer) ReportStatuses(ctx context.Context, n *benchgen.NodeStatus) (*benchgen.Ack, error) {
	return s.ReportStatus(ctx, n)
}

func identity[T any](v *T) (*T, error) { return v, nil }

// lockstepServer is a running lockstep nodecontroller.
type lockstepServer struct {
	srv  *framework.Server
	addr string
	tls  bool
	done chan error
}

// URL is the server's base URL: https under TLS.
func (l *lockstepServer) URL() string {
	if l.tls {
		return "https://" + l.addr
	}
	return "http://" + l.addr
}

// serverConfig is the nodecontroller of the suite: the zero config apart
// from required names, as the targets say.
func serverConfig() framework.ServerConfig {
	return framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: quiet}
}

// startLockstep serves the benchmark contract 1.0.0 (and 0.9.0 through
// fork mode) on addr ("127.0.0.1:0" for any port); register adds more.
func startLockstep(addr string, cfg framework.ServerConfig, register func(*framework.Server)) (*lockstepServer, error) {
	srv, err := framework.NewServer(cfg)
	if err != nil {
		return nil, err
	}
	benchgen.Register(srv, &ackServer{})
	framework.ForkUnary(srv, forkContract, benchgen.Contract, benchgen.MethodReportStatus,
		identity[benchgen.NodeStatus], identity[benchgen.Ack])
	framework.ForkBatch(srv, forkContract, benchgen.Contract, benchgen.MethodReportStatuses,
		identity[benchgen.NodeStatus], identity[benchgen.Ack])
	if register != nil {
		register(srv)
	}
	l, err := listenRetrying(addr)
	if err != nil {
		return nil, err
	}
	s := &lockstepServer{srv: srv, addr: l.Addr().String(), tls: cfg.MTLS != nil || cfg.TLSConfig != nil, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(l) }()
	return s, nil
}

// listenRetrying listens on addr, retrying for a while when the address is
// still held by a server that just stopped.
func listenRetrying(addr string) (net.Listener, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(time.Millisecond)
	}
}

// stop closes the server without draining (kill) or drains it.
func (l *lockstepServer) stop(kill bool) error {
	var err error
	if kill {
		err = l.srv.Close()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = l.srv.Shutdown(ctx)
		cancel()
	}
	select {
	case serveErr := <-l.done:
		if errors.Is(serveErr, net.ErrClosed) {
			serveErr = nil
		}
		return errors.Join(err, serveErr)
	case <-time.After(10 * time.Second):
		return errors.New("the lockstep server did not stop within 10s")
	}
}

// lockstepClient returns a ready kubelet of the contract c at url.
func lockstepClient(c *framework.Contract, url string, mod func(*framework.ClientConfig)) (*framework.Client, error) {
	cfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{url}, Logger: quiet}
	if mod != nil {
		mod(&cfg)
	}
	cl, err := framework.NewClient(c, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.WaitReady(ctx); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("the lockstep client is not ready: %w", err)
	}
	return cl, nil
}

func checkAck(accepted bool, err error) error {
	if err == nil && !accepted {
		err = errors.New("ack not accepted")
	}
	return err
}
