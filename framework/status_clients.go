package framework

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// ClientStatusConfig configures [NewClientStatusHandler].
type ClientStatusConfig struct {
	// Component, Instance and Release name the process on its status, as
	// a server's config does for a server; Instance defaults to 16 random
	// hex digits.
	Component, Instance, Release string
	// Clients are the process's clients: shown on its status with their
	// endpoints and blocked calls, added to its metrics, and waited on by
	// /readyz.
	Clients []*Client
	// Metrics are served at /metrics, with the clients' endpoint and
	// blocked-call gauges added. Give the same metrics' observer to the
	// clients (ClientConfig.Observer = m.Client()) so their handshakes and
	// calls are counted too. Nil: /metrics is not served.
	Metrics *Metrics
	// Clock is the clock of the status's "now"; default the real one.
	Clock clockwork.Clock
}

// NewClientStatusHandler returns what a [Server] serves of itself, for a
// process that only calls (an agent, a controller with no API of its own):
// GET /lockstep/status (the same JSON and page, so lockstepctl status reads
// it; no contracts served, no sessions), /metrics, /healthz, /livez, and
// /readyz, ready when every client is. It is a handler, not a server: it
// listens on nothing and authenticates no one, so there is no peer to warn
// about; mount it on the process's own HTTP server, behind whatever guards
// that server's other debug endpoints.
func NewClientStatusHandler(cfg ClientStatusConfig) http.Handler {
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Instance == "" {
		cfg.Instance = randomID(8)
	}
	cfg.Clients = append([]*Client(nil), cfg.Clients...)
	h := &clientStatusHandler{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+protocol.PathStatus, h.serveStatus)
	live := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	}
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /readyz", h.serveReady)
	if m := cfg.Metrics; m != nil {
		for _, c := range cfg.Clients {
			m.WatchClient(c)
		}
		mux.Handle("GET "+PathMetrics, m.Handler())
	}
	return mux
}

type clientStatusHandler struct{ cfg ClientStatusConfig }

// notReady lists the clients that are not ready and why, as a server's
// readiness check for an added client does.
func (h *clientStatusHandler) notReady() []string {
	var missing []string
	for _, c := range h.cfg.Clients {
		if err := c.Ready(); err != nil {
			missing = append(missing, c.contract.Name()+" client: "+err.Error())
		}
	}
	return missing
}

func (h *clientStatusHandler) status() ServerStatus {
	notReady := h.notReady()
	st := ServerStatus{
		Component: h.cfg.Component, Instance: h.cfg.Instance, Release: h.cfg.Release,
		Now: h.cfg.Clock.Now().Round(time.Millisecond).UTC(), Ready: len(notReady) == 0, NotReady: strings.Join(notReady, "; "),
		Contracts: map[string][]string{}, Served: []ServedVersion{}, PeersByVersion: map[string]map[string]int{},
		Sessions: []SessionInfo{}, Topics: []TopicStats{}, Clients: make([]ClientStatus, 0, len(h.cfg.Clients)),
	}
	for _, c := range h.cfg.Clients {
		st.Clients = append(st.Clients, c.Status())
	}
	sort.SliceStable(st.Clients, func(i, j int) bool { return st.Clients[i].Contract < st.Clients[j].Contract })
	return st
}

func (h *clientStatusHandler) serveStatus(w http.ResponseWriter, r *http.Request) {
	st := h.status()
	if prefersHTML(r) {
		var buf bytes.Buffer
		if err := statusPage.Execute(&buf, st); err != nil {
			http.Error(w, "status page did not render: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(buf.Bytes())
		return
	}
	body, err := json.Marshal(st)
	if err != nil {
		http.Error(w, "status did not encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (h *clientStatusHandler) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if missing := h.notReady(); len(missing) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + strings.Join(missing, "; ") + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
