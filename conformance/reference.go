package conformance

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
)

// Reference is a running reference server of the conformance contract: the
// framework's implementation, which the suite's server-side cases are
// checked against in make test.
type Reference struct {
	// URL is its base URL (http://host:port).
	URL string
	// Server is the framework server.
	Server *framework.Server
	done   chan error
}

// StartReference starts the reference server on addr (e.g. "127.0.0.1:0")
// with cfg; Component and Release are filled in when empty. Its Drain
// method begins a Shutdown.
func StartReference(addr string, cfg framework.ServerConfig) (*Reference, error) {
	c, err := Contract()
	if err != nil {
		return nil, err
	}
	if cfg.Component == "" {
		cfg.Component = c.Server()
	}
	if cfg.Release == "" {
		cfg.Release = "1.0.0"
	}
	srv, err := framework.NewServer(cfg)
	if err != nil {
		return nil, err
	}
	Serve(srv, c, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Reference{URL: "http://" + l.Addr().String(), Server: srv, done: make(chan error, 1)}
	go func() { r.done <- srv.Serve(l) }()
	return r, nil
}

// Stop stops the server at once, without draining.
func (r *Reference) Stop() error {
	err := r.Server.Close()
	select {
	case serr := <-r.done:
		if errors.Is(serr, context.Canceled) {
			serr = nil
		}
		_ = serr
	case <-time.After(10 * time.Second):
		err = errors.Join(err, errors.New("conformance: the reference server did not stop within 10s"))
	}
	return err
}
