package upgradesim

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/lockstep-dev/lockstep/framework"
)

// Env is what a [Version]'s Start receives: who the replica is, where it
// serves, and the kit's hooks into its servers and clients.
type Env struct {
	// Component, Replica and Name say which replica starts
	// ("nodecontroller", 1, "nodecontroller#1"), and Version at which
	// version.
	Component string
	Replica   int
	Name      string
	Version   string
	// Addr is the replica's loopback address, the same across restarts,
	// and URL its base URL; the kit serves the [Instance] there.
	Addr string
	URL  string
	// Logger is [Config.Logger] with the replica and version attached.
	Logger *slog.Logger

	c   *Cluster
	inc *incarnation
}

// ServerConfig returns cfg completed for this replica: Component and
// Logger filled in when empty, and the kit's interceptor placed first, so
// the kit sees every call the server's handlers process and at which
// version.
func (e *Env) ServerConfig(cfg framework.ServerConfig) framework.ServerConfig {
	if cfg.Component == "" {
		cfg.Component = e.Component
	}
	if cfg.Logger == nil {
		cfg.Logger = e.Logger
	}
	cfg.Interceptors = append([]framework.Interceptor{e.c.serverInterceptor(e.inc)}, cfg.Interceptors...)
	return cfg
}

// ClientConfig returns cfg completed for this replica's client of
// component server: Component and Logger filled in when empty, Endpoints
// set to the server's replicas when cfg names neither endpoints nor a
// source, the kit's fault-injecting transport wrapped around cfg.Transport
// (or the default one), and the kit's interceptor placed first, so traffic
// calls carry their ids.
func (e *Env) ClientConfig(server string, cfg framework.ClientConfig) framework.ClientConfig {
	if cfg.Component == "" {
		cfg.Component = e.Component
	}
	if cfg.Logger == nil {
		cfg.Logger = e.Logger
	}
	if len(cfg.Endpoints) == 0 && cfg.Source == nil {
		cfg.Endpoints = e.Endpoints(server)
	}
	if cfg.Transport != nil {
		cfg.Transport = e.inc.transport.wrap(cfg.Transport)
	} else {
		cfg.Transport = e.inc.transport
	}
	cfg.Interceptors = append([]framework.Interceptor{e.c.clientInterceptor()}, cfg.Interceptors...)
	return cfg
}

// Endpoints returns the base URLs of a component's replicas, for clients
// and pinned peers ("http://127.0.0.1:41234").
func (e *Env) Endpoints(component string) []string { return e.c.Endpoints(component) }

// Transport returns the replica's fault-injecting transport, for HTTP
// clients built by hand: partitions, latency and kills apply to them too.
func (e *Env) Transport() http.RoundTripper { return e.inc.transport }

// Context returns a context that ends when the replica stops.
func (e *Env) Context() context.Context { return e.inc.ctx }

// Apply records that the handler serving ctx applied its call's effect:
// call it where the handler commits, once. The kit checks that every
// acknowledged call was applied and none twice. Calls the kit did not make
// are ignored.
func (e *Env) Apply(ctx context.Context) {
	call := framework.CallFromContext(ctx)
	if call == nil {
		return
	}
	if id := call.Header.Get(HeaderCall); id != "" {
		e.c.applied(id, itemKey(call), e.inc)
	}
}

// ApplyRequest is [Env.Apply] for a handler outside the framework (a
// pinned external peer, a fake): the call's id is read from r's header.
func (e *Env) ApplyRequest(r *http.Request) {
	if id := r.Header.Get(HeaderCall); id != "" {
		e.c.applied(id, "", e.inc)
	}
}

// observe wraps a plain handler so the kit sees the traffic calls it
// answers successfully, at the version of their path.
func (c *Cluster) observe(inc *incarnation, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderCall)
		if id == "" {
			h.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == 0 || sw.status < 300 {
			contract, version := pathVersion(r.URL.Path)
			c.processed(id, inc, contract, version)
		}
	})
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader remembers the first status.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write answers 200 unless a status was written.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
