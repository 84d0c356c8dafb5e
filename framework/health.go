package framework

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
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
	var missing []string
	if s.draining.Load() {
		missing = append(missing, "draining")
	}
	for _, c := range s.cfg.RequirePeers {
		if s.sessions.countFor(c) == 0 {
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
	if len(missing) > 0 {
		return fmt.Errorf("not ready: %s", strings.Join(missing, "; "))
	}
	return nil
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

// ServerStatus is the JSON of GET /lockstep/status: who the server is, what
// it serves, and its live sessions.
type ServerStatus struct {
	Component string              `json:"component"`
	Instance  string              `json:"instance"`
	Release   string              `json:"release"`
	Draining  bool                `json:"draining"`
	Ready     bool                `json:"ready"`
	Contracts map[string][]string `json:"contracts"`
	// PeersByVersion counts live sessions per contract and agreed version:
	// in fork mode, it shows who still speaks an old version, so an operator
	// knows when the fork can be retired.
	PeersByVersion map[string]map[string]int `json:"peersByVersion"`
	Sessions       []SessionInfo             `json:"sessions"`
	// Topics describes the topics the server holds, with their watchers.
	Topics []TopicStats `json:"topics"`
}

// Status returns the server's status.
func (s *Server) Status() ServerStatus {
	st := ServerStatus{
		Component: s.cfg.Component, Instance: s.cfg.Instance, Release: s.cfg.Release,
		Draining: s.draining.Load(), Ready: s.Ready() == nil,
		Contracts: map[string][]string{}, Sessions: s.Sessions(), Topics: s.TopicStats(),
	}
	if st.Topics == nil {
		st.Topics = []TopicStats{}
	}
	st.PeersByVersion = map[string]map[string]int{}
	for _, sess := range st.Sessions {
		if st.PeersByVersion[sess.Contract] == nil {
			st.PeersByVersion[sess.Contract] = map[string]int{}
		}
		st.PeersByVersion[sess.Contract][sess.Version]++
	}
	s.mu.RLock()
	for name, sc := range s.contracts {
		vs := sortedKeys(sc.versions)
		sort.Strings(vs)
		st.Contracts[name] = vs
	}
	s.mu.RUnlock()
	return st
}

func (s *Server) serveStatus(w http.ResponseWriter, _ *http.Request) {
	body, err := json.Marshal(s.Status())
	if err != nil {
		writeError(w, Errorf(CodeInternal, "status did not encode: %v", err), false, false)
		return
	}
	writeJSON(w, http.StatusOK, body)
}
