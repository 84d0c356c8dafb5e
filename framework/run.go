package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Run serves on ServerConfig.Addr until ctx ends, then drains
// ([Server.Shutdown]) and returns: a binary's main is
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	if err := srv.Run(ctx); err != nil { log.Fatal(err) }
//
// It returns an error when the server cannot listen or serve, or when the
// drain fails; nil after a graceful drain. The drain is bounded by
// DrainTimeout plus [RunShutdownGrace] for calls still in flight. Wrapped
// in [Runnable], it is a controller-runtime manager.Runnable.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Addr == "" {
		return errors.New("lockstep: Server.Run needs ServerConfig.Addr")
	}
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("lockstep: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	select {
	case err := <-served:
		// Serve failed (or Shutdown came from elsewhere): nothing to drain.
		return err
	case <-ctx.Done():
	}
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DrainTimeout+RunShutdownGrace)
	defer cancel()
	err = s.Shutdown(drain)
	return errors.Join(err, <-served)
}

// RunShutdownGrace is how long [Server.Run] waits, after a drain's first
// phase, for calls still in flight before it cuts them.
const RunShutdownGrace = 10 * time.Second

// Run holds the client until ctx ends, then closes it: its sessions are
// closed on the servers, so a draining server need not wait for them to
// lapse. The client works from [NewClient] on; Run only ties its end to a
// context, as [Server.Run] does a server's. It returns nil. Wrapped in
// [Runnable], it is a controller-runtime manager.Runnable.
func (c *Client) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-c.ctx.Done(): // closed by someone else
	}
	return c.Close()
}

// Runnable adapts a Run method to anything that starts components with
// Start(ctx) error and expects it to block until ctx ends, such as
// controller-runtime's manager.Runnable:
//
//	mgr.Add(framework.Runnable(srv.Run))
//
// (Server already has a Start of its own, for [Server.ServeHTTP] users.)
type Runnable func(ctx context.Context) error

// Start runs r.
func (r Runnable) Start(ctx context.Context) error { return r(ctx) }

// Healthz is [Server.Ready] in the shape of controller-runtime's
// healthz.Checker, for a manager's readiness endpoint:
//
//	mgr.AddReadyzCheck("lockstep", srv.Healthz)
func (s *Server) Healthz(*http.Request) error { return s.Ready() }

// Healthz is [Client.Ready] in the shape of controller-runtime's
// healthz.Checker.
func (c *Client) Healthz(*http.Request) error { return c.Ready() }
