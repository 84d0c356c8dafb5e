package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// ClientProcess is what a process that only calls (an agent, a
// controller with no API of its own) serves of itself, in place of a
// server's: its status, health, readiness and metrics. It listens on
// nothing and authenticates no one; the process mounts [ClientProcess.Handler]
// on a server of its own.
type ClientProcess struct {
	// Status returns the process's status, a framework.ServerStatus.
	Status func() any
	// NotReady lists what keeps the process from being ready, nil when
	// nothing does.
	NotReady func() []string
	// Metrics serves /metrics (at metricsPath); nil: not served.
	Metrics http.Handler
}

// Handler serves GET /lockstep/status (JSON, or the page for a browser),
// /healthz, /livez, /readyz (ready when NotReady lists nothing) and, with
// Metrics, metricsPath.
func (p ClientProcess) Handler(metricsPath string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+protocol.PathStatus, p.serveStatus)
	live := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	}
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /readyz", p.serveReady)
	if p.Metrics != nil {
		mux.Handle("GET "+metricsPath, p.Metrics)
	}
	return mux
}

func (p ClientProcess) serveStatus(w http.ResponseWriter, r *http.Request) {
	if err := Serve(w, r, p.Status()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Serve answers a read of GET /lockstep/status with st, a
// framework.ServerStatus: JSON for programs, the default, and the page a
// person reads for a browser ([PrefersHTML]). When st does not render or
// encode, it writes nothing and returns the error, which the caller
// answers its own way.
func Serve(w http.ResponseWriter, r *http.Request, st any) error {
	if PrefersHTML(r) {
		if err := WritePage(w, st); err != nil {
			return fmt.Errorf("status page did not render: %w", err)
		}
		return nil
	}
	body, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("status did not encode: %w", err)
	}
	w.Header().Set("Content-Type", protocol.ContentTypeJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

func (p ClientProcess) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if missing := p.NotReady(); len(missing) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + strings.Join(missing, "; ") + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
