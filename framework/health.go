package framework

import (
	"fmt"
	"net/http"
	"strings"
)

// serveLive answers /healthz and /livez: the process serves.
func (s *Server) serveLive(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// Ready returns nil when the server is ready: not draining, every contract
// in RequirePeers has a live session, and every readiness check passes.
// Otherwise the error says what is missing.
func (s *Server) Ready() error {
	if missing := s.notReady(); len(missing) > 0 {
		return fmt.Errorf("not ready: %s", strings.Join(missing, "; "))
	}
	return nil
}

// notReady lists what keeps the server from being ready, or nothing.
func (s *Server) notReady() []string {
	var missing []string
	if s.draining.Load() {
		missing = append(missing, "draining")
	}
	for _, c := range s.cfg.RequirePeers {
		if s.sessions.CountFor(c) == 0 {
			missing = append(missing, "no live "+c+" session")
		}
	}
	s.mu.RLock()
	names := sortedKeys(s.checks)
	checks := make([]func() error, len(names))
	for i, n := range names {
		checks[i] = s.checks[n]
	}
	s.mu.RUnlock()
	for i, check := range checks {
		if err := check(); err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", names[i], err))
		}
	}
	return missing
}

// serveReady answers /readyz: 200 when [Server.Ready] passes, else 503 with
// the reason.
func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.Ready(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
