package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep-dev/lockstep/framework"
)

// Service is a built component, as [Main] runs it.
type Service struct {
	// Lockstep is the component's lockstep server, if it serves contracts;
	// its /readyz is the binary's, with the component's own checks added
	// to it ([framework.Server.AddReadinessCheck]).
	Lockstep *framework.Server
	// Ready is the readiness of a component without a lockstep server.
	Ready func() error
	// Handlers are served beside the rest, by http.ServeMux pattern; under
	// mutual TLS, like /metrics and /status, to operator identities only.
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
// --listen, and on SIGTERM or SIGINT stops it gracefully: a lockstep server
// drains first (its clients move to another replica or wait for the
// replacement), then the component's work stops and its clients close their
// sessions, then the listener closes. It returns the process's exit code.
func Main(f *Flags, build func(rt *Runtime) (*Service, error)) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, f, os.Stderr, build); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", f.Component, err)
		return 1
	}
	return 0
}

// Run is [Main] until ctx ends, with logs to stderr.
func Run(ctx context.Context, f *Flags, stderr io.Writer, build func(rt *Runtime) (*Service, error)) error {
	rt, err := NewRuntime(f, stderr)
	if err != nil {
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
	l, err := net.Listen("tcp", f.Listen)
	if err != nil {
		closeSvc()
		return err
	}
	if !f.TLS() && !f.Insecure && !isLoopback(l.Addr()) {
		l.Close()
		closeSvc()
		return fmt.Errorf("refusing plain HTTP on %s: give --tls-cert and --tls-key, or --insecure", l.Addr())
	}
	handler, err := rt.handler(svc)
	if err != nil {
		l.Close()
		closeSvc()
		return err
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, TLSConfig: rt.serverTLS}
	served := make(chan error, 1)
	go func() {
		if rt.serverTLS != nil {
			served <- hs.ServeTLS(l, "", "")
		} else {
			served <- hs.Serve(l)
		}
	}()
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if svc.Run != nil {
			svc.Run(runCtx)
		}
	}()
	rt.Logger.Info("serving", "addr", l.Addr().String(), "api", f.API, "release", f.Release, "fork", f.Fork, "tls", f.TLS())

	var serveErr error
	select {
	case <-ctx.Done():
		rt.Logger.Info("stopping", "drain", svc.Lockstep != nil)
	case serveErr = <-served:
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), f.DrainTimeout)
	defer cancel()
	var errs []error
	if svc.Lockstep != nil {
		if err := svc.Lockstep.Shutdown(stopCtx); err != nil {
			errs = append(errs, fmt.Errorf("drain: %w", err))
		}
	}
	stopRun()
	<-ran
	closeSvc()
	if err := hs.Shutdown(stopCtx); err != nil {
		errs = append(errs, err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, serveErr)
	}
	rt.Logger.Info("stopped")
	return errors.Join(errs...)
}

// handler serves the component: /metrics, /status and its own handlers
// (under mutual TLS to operator identities only: they say who the peers
// are), and the lockstep server (its protocol and health endpoints, which
// authenticates every lockstep entry itself) or else health endpoints of
// its own.
func (rt *Runtime) handler(svc *Service) (http.Handler, error) {
	mux := http.NewServeMux()
	operatorOnly := func(h http.Handler) http.Handler { return h }
	if rt.creds != nil {
		operatorOnly = rt.creds.OperatorOnly
	}
	mux.Handle("GET /metrics", operatorOnly(promhttp.HandlerFor(rt.Registry, promhttp.HandlerOpts{Registry: rt.Registry})))
	status := func() any { return map[string]string{"component": rt.Flags.Component} }
	if svc.Status != nil {
		status = svc.Status
	}
	mux.Handle("GET /status", operatorOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(status())
	})))
	for pattern, h := range svc.Handlers {
		mux.Handle(pattern, operatorOnly(h))
	}
	if svc.Lockstep != nil {
		if err := svc.Lockstep.Start(); err != nil {
			return nil, err
		}
		mux.Handle("/", svc.Lockstep)
	} else {
		ok := func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") }
		mux.HandleFunc("GET /healthz", ok)
		mux.HandleFunc("GET /livez", ok)
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
			if svc.Ready != nil {
				if err := svc.Ready(); err != nil {
					http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
					return
				}
			}
			_, _ = io.WriteString(w, "ok\n")
		})
	}
	return mux, nil
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
