// Package frameworktest helps users test components built on lockstep: it
// starts servers on random loopback ports (or a given one, to simulate a
// restart in place), builds clients, and makes throwaway TLS material, each
// cleaned up when the test ends.
package frameworktest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
)

// Running is a server started for a test.
type Running struct {
	// Server is the running server.
	Server *framework.Server
	// Addr is its listening address ("127.0.0.1:41234") and URL its base URL.
	Addr string
	URL  string
	done chan error
}

// Quiet returns a logger that discards everything, for tests that do not
// want the runtime's logs.
func Quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// StartServer starts a server on a random port of 127.0.0.1. register adds
// the handlers. The server is shut down (drained) when the test ends, unless
// the test stopped it first.
func StartServer(t testing.TB, cfg framework.ServerConfig, register func(*framework.Server)) *Running {
	t.Helper()
	return StartServerAt(t, "127.0.0.1:0", cfg, register)
}

// StartServerAt starts a server on addr, retrying briefly while the address
// is still held by a server that is going away; use it to replace a server
// in place.
func StartServerAt(t testing.TB, addr string, cfg framework.ServerConfig, register func(*framework.Server)) *Running {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = Quiet()
	}
	srv, err := framework.NewServer(cfg)
	if err != nil {
		t.Fatalf("frameworktest: %v", err)
	}
	if register != nil {
		register(srv)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("frameworktest: %v", err) // an incomplete registration, say
	}
	l, err := listen(addr)
	if err != nil {
		t.Fatalf("frameworktest: listen on %s: %v", addr, err)
	}
	scheme := "http://"
	if cfg.TLSConfig != nil || cfg.MTLS != nil {
		scheme = "https://"
	}
	r := &Running{Server: srv, Addr: l.Addr().String(), URL: scheme + l.Addr().String(), done: make(chan error, 1)}
	go func() { r.done <- srv.Serve(l) }()
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

func listen(addr string) (net.Listener, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop drains and stops the server, waiting at most 10 seconds, and returns
// what Serve returned. Calling it again returns nil.
func (r *Running) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.Server.Shutdown(ctx)
	return errors.Join(err, r.wait())
}

// Kill stops the server at once, without draining, as a crash would.
func (r *Running) Kill() error {
	err := r.Server.Close()
	return errors.Join(err, r.wait())
}

func (r *Running) wait() error {
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(10 * time.Second):
		return errors.New("frameworktest: server did not stop within 10s")
	}
}

// NewClient starts a client of c for a test and closes it when the test
// ends.
func NewClient(t testing.TB, c *framework.Contract, cfg framework.ClientConfig) *framework.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = Quiet()
	}
	cl, err := framework.NewClient(c, cfg)
	if err != nil {
		t.Fatalf("frameworktest: %v", err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}
