package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep-dev/lockstep/framework"
)

// Service is a built component, as [Main] runs it.
type Service struct {
	// Lockstep is the component's lockstep server, if it serves contracts;
	// its /readyz is the binary's, with the component's own checks added
	// to it ([framework.Server.AddReadinessCheck]).
	Lockstep *framework.Server
	// Ready is the readiness of a component without a lockstep server
	// (one that only calls others).
	Ready func() error
	// Handlers are served beside the rest, by pattern as
	// [framework.Server.Handle] takes it (e.g. "GET /debug"); under mutual
	// TLS, like /metrics and /status, to operator identities only.
	Handlers map[string]http.Handler
	// Status is the JSON of GET /status: what the component sees of its
	// peers.
	Status func() any
	// Run does the component's work until ctx ends.
	Run func(ctx context.Context)
	// Close releases the component's clients once Run has returned.
	Close func()
}

// Main runs a binary: it builds the component with build, serves it on
// --listen, and on SIGTERM or SIGINT stops it gracefully: its lockstep
// server drains and closes its listener ([framework.Server.Run]), then the
// component's work stops and its clients close their sessions. It returns
// the process's exit code.
func Main(f *Flags, build func(rt *Runtime) (*Service, error)) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, f, os.Stderr, build); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", f.Component, err)
		return 1
	}
	return 0
}

// Run is [Main] until ctx ends, with logs to stderr. Everything is served
// by one lockstep server through [framework.Server.Run], which drains it
// when ctx ends: the component's own server, or for a component that serves
// no contract (a client only) a server without contracts, which serves its
// health endpoints, /metrics and /status the same way.
func Run(ctx context.Context, f *Flags, stderr io.Writer, build func(rt *Runtime) (*Service, error)) error {
	rt, err := NewRuntime(f, stderr)
	if err != nil {
		return err
	}
	if err := f.checkPlainHTTP(); err != nil {
		return err
	}
	svc, err := build(rt)
	if err != nil {
		return err
	}
	closeSvc := func() {
		if svc.Close != nil {
			svc.Close()
		}
	}
	srv, err := rt.server(svc)
	if err != nil {
		closeSvc()
		return err
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if svc.Run != nil {
			svc.Run(runCtx)
		}
	}()
	rt.Logger.Info("serving", "addr", f.Listen, "api", f.API, "release", f.Release, "fork", f.Fork, "tls", f.TLS())
	// Run returns once ctx has ended and the server has drained (its
	// clients moved to another replica or wait for the replacement), or
	// at once when it cannot serve; then the component's work stops and
	// its clients close their sessions.
	served := srv.Run(ctx)
	stopRun()
	<-ran
	closeSvc()
	rt.Logger.Info("stopped")
	if served != nil {
		return fmt.Errorf("serve: %w", served)
	}
	return nil
}

// server returns the lockstep server that serves svc on --listen, with
// /metrics, /status and the component's own handlers added to it.
func (rt *Runtime) server(svc *Service) (*framework.Server, error) {
	srv := svc.Lockstep
	if srv == nil {
		var err error
		if srv, err = framework.NewServer(rt.ServerConfig(framework.ServerConfig{})); err != nil {
			return nil, err
		}
		if svc.Ready != nil {
			srv.AddReadinessCheck(rt.Flags.Component, svc.Ready)
		}
	}
	srv.Handle(framework.PathMetrics, promhttp.HandlerFor(rt.Registry, promhttp.HandlerOpts{Registry: rt.Registry}))
	status := func() any { return map[string]string{"component": rt.Flags.Component} }
	if svc.Status != nil {
		status = svc.Status
	}
	srv.Handle("GET /status", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(status())
	}))
	for pattern, h := range svc.Handlers {
		srv.Handle(pattern, h)
	}
	return srv, nil
}

// checkPlainHTTP refuses plain HTTP off loopback without --insecure, before
// anything is built (the server refuses it too, naming its configuration
// rather than these flags).
func (f *Flags) checkPlainHTTP() error {
	if f.TLS() || f.Insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(f.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", f.Listen, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing plain HTTP on %s: give --tls-cert and --tls-key, or --insecure", f.Listen)
}
