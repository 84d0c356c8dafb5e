package framework

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

// ServerStatus is the JSON of GET /lockstep/status: who the server is, what
// it serves, its peers' sessions, its topics, and the clients it was given
// with [Server.AddClient]. Durations travel as Go duration strings ("5s")
// and times as RFC 3339, so a person can read the JSON too.
type ServerStatus struct {
	Component string `json:"component"`
	Instance  string `json:"instance"`
	Release   string `json:"release"`
	// Now is the server's wall-clock time when the status was taken.
	Now      time.Time `json:"now"`
	Draining bool      `json:"draining"`
	Ready    bool      `json:"ready"`
	// NotReady is why /readyz fails, when it does: what is missing,
	// without /readyz's "not ready: " before it.
	NotReady string `json:"notReady,omitempty"`
	// Contracts lists the versions served of each contract.
	Contracts map[string][]string `json:"contracts"`
	// Served describes each contract version served, with its fingerprint
	// and the component that may call it: what a client must offer.
	Served []ServedVersion `json:"served"`
	// PeersByVersion counts live sessions per contract and agreed version:
	// in fork mode, it shows who still speaks an old version, so an operator
	// knows when the fork can be retired.
	PeersByVersion map[string]map[string]int `json:"peersByVersion"`
	// Sessions are the server's peers: one per (contract, client instance).
	// SessionCount is how many there are; the status a server serves lists
	// at most [StatusMaxSessions] of them (Truncated says so), while
	// PeersByVersion counts them all.
	SessionCount int           `json:"sessionCount"`
	Sessions     []SessionInfo `json:"sessions"`
	// Topics describes the topics the server holds, with their watchers.
	Topics []TopicStats `json:"topics"`
	// Clients describes the clients added with [Server.AddClient]: the
	// component's own outgoing peers.
	Clients []ClientStatus `json:"clients"`
	// Truncated says what the status served at /lockstep/status leaves
	// out to stay bounded, "" when it lists everything: sessions beyond
	// [StatusMaxSessions], watchers of a topic beyond [StatusMaxWatchers].
	Truncated string `json:"truncated,omitempty"`
}

// The bounds of the status a server serves (GET /lockstep/status, JSON
// and page). Its size is the server's to decide, not its peers': one
// certificate's 9,000 sessions made a status read of 1.8 MB, and a
// server at its 100,000 sessions would answer tens of megabytes to every
// read (and lockstepctl would have to hold them). Beyond the bounds the
// status lists sessions taken in turns from each identity that owns some
// (so a peer that chooses its instance names cannot push others' sessions
// out of view: every identity keeps at least one listed while there are
// fewer identities than the bound), and the first watchers of each topic
// in its order; it counts them all (SessionCount, PeersByVersion, each
// topic's WatcherCount), and says what it left out in Truncated.
// Without mutual TLS every session's identity is empty, and the first
// sessions in the status's order are listed. [Server.Status] itself is
// not bounded.
const (
	// StatusMaxSessions is the most sessions the served status lists.
	StatusMaxSessions = 1000
	// StatusMaxWatchers is the most watchers of one topic it lists.
	StatusMaxWatchers = 100
)

// bound cuts st to the bounds of a served status, saying what it left out.
func (st *ServerStatus) bound() {
	var cut []string
	if n := len(st.Sessions); n > StatusMaxSessions {
		st.Sessions = inTurns(st.Sessions, StatusMaxSessions)
		cut = append(cut, fmt.Sprintf("%d of %d sessions (in turns per identity)", StatusMaxSessions, n))
	}
	for i := range st.Topics {
		t := &st.Topics[i]
		if n := len(t.Watchers); n > StatusMaxWatchers {
			t.Watchers = t.Watchers[:StatusMaxWatchers]
			cut = append(cut, fmt.Sprintf("%d of the %d watchers of %s %s topic %s", StatusMaxWatchers, n, t.Contract, t.Version, t.Topic))
		}
	}
	if len(cut) > 0 {
		st.Truncated = "lists only " + strings.Join(cut, "; ") + " (the counts cover all)"
	}
}

// inTurns returns n of sessions (n < len(sessions)), taken in turns from
// each identity in identity order: the first session of every identity,
// then the second, and so on. What it keeps stays in the order of
// sessions.
func inTurns(sessions []SessionInfo, n int) []SessionInfo {
	byIdentity := map[string][]int{}
	for i, s := range sessions {
		byIdentity[s.Identity] = append(byIdentity[s.Identity], i)
	}
	ids := sortedKeys(byIdentity)
	keep := make([]bool, len(sessions))
	for kept, turn := 0, 0; kept < n; turn++ {
		for _, id := range ids {
			if turn < len(byIdentity[id]) && kept < n {
				keep[byIdentity[id][turn]] = true
				kept++
			}
		}
	}
	out := make([]SessionInfo, 0, n)
	for i, s := range sessions {
		if keep[i] {
			out = append(out, s)
		}
	}
	return out
}

// ServedVersion is one contract version a server serves.
type ServedVersion struct {
	Contract    string `json:"contract"`
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	// Client is the component the contract lets call it.
	Client string `json:"client"`
}

// Session states in [SessionInfo.State].
const (
	// SessionLive: renewed within the last two heartbeat intervals.
	SessionLive = "live"
	// SessionLate: not renewed for two heartbeat intervals or more; it
	// lapses when its TTL passes.
	SessionLate = "late"
	// SessionDraining: the server is draining and the peer has been told.
	SessionDraining = "draining"
)

// SessionInfo describes a session for hooks and the status page.
type SessionInfo struct {
	Contract string
	// Version is the agreed version.
	Version string
	Peer    handshake.Peer
	// Identity is the identity of the session's owner, as its verified
	// client certificate names it (lockstep://kubelet/node-1), "" without
	// mutual TLS. Unlike Peer, which the peer's hello claims, it names who
	// holds the session: the identity a server's limits charge.
	Identity string
	// State is [SessionLive], [SessionLate] or [SessionDraining].
	State string
	// Age and Idle are measured on the server's monotonic clock; Since is
	// when the session was opened, on the server's wall clock.
	Age   time.Duration
	Idle  time.Duration
	Since time.Time
}

// sessionInfoJSON is the wire form of [SessionInfo].
type sessionInfoJSON struct {
	Contract string             `json:"contract"`
	Version  string             `json:"version"`
	Peer     handshake.Peer     `json:"peer"`
	Identity string             `json:"identity,omitempty"`
	State    string             `json:"state"`
	Since    time.Time          `json:"since"`
	Age      handshake.Duration `json:"age"`
	Idle     handshake.Duration `json:"idle"`
}

// MarshalJSON writes durations as Go duration strings, rounded to the
// millisecond, and Since as RFC 3339.
func (i SessionInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(sessionInfoJSON{
		Contract: i.Contract, Version: i.Version, Peer: i.Peer, Identity: i.Identity, State: i.State,
		Since: i.Since.Round(time.Millisecond).UTC(),
		Age:   handshake.Duration(i.Age.Round(time.Millisecond)), Idle: handshake.Duration(i.Idle.Round(time.Millisecond)),
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (i *SessionInfo) UnmarshalJSON(b []byte) error {
	var w sessionInfoJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*i = SessionInfo{Contract: w.Contract, Version: w.Version, Peer: w.Peer, Identity: w.Identity, State: w.State,
		Since: w.Since, Age: time.Duration(w.Age), Idle: time.Duration(w.Idle)}
	return nil
}

// ClientStatus describes a client of the component, for its status page.
type ClientStatus struct {
	Contract string `json:"contract"`
	Version  string `json:"version"`
	// Server is the component the client calls.
	Server    string           `json:"server"`
	Ready     bool             `json:"ready"`
	Endpoints []EndpointStatus `json:"endpoints"`
	// Blocked is how many calls wait for a compatible peer now, and
	// LongestBlocked how long the oldest of them has waited.
	Blocked        int                `json:"blocked"`
	LongestBlocked handshake.Duration `json:"longestBlocked"`
}

// Status returns the client's status.
func (c *Client) Status() ClientStatus {
	n, longest := c.blocked.snapshot(c.cfg.Clock.Now())
	return ClientStatus{
		Contract: c.contract.Name(), Version: c.contract.Version(), Server: c.contract.Server(),
		Ready: c.Ready() == nil, Endpoints: c.Endpoints(),
		Blocked: n, LongestBlocked: handshake.Duration(longest.Round(time.Millisecond)),
	}
}

// AddClient shows a client of this component on the server's status page,
// adds its endpoints and blocked calls to the server's metrics, and makes
// /readyz wait for it: a component is ready only when its own peers are.
func (s *Server) AddClient(c *Client) {
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	s.AddReadinessCheck(c.contract.Name()+" client", c.Ready)
	if m := s.cfg.Metrics; m != nil {
		m.WatchClient(c)
	}
}

// Status returns the server's status.
func (s *Server) Status() ServerStatus {
	notReady := s.notReady()
	st := ServerStatus{
		Component: s.cfg.Component, Instance: s.cfg.Instance, Release: s.cfg.Release,
		Now: s.cfg.Clock.Now().Round(time.Millisecond).UTC(), Draining: s.draining.Load(), Ready: len(notReady) == 0,
		Contracts: map[string][]string{}, Served: []ServedVersion{}, Sessions: s.Sessions(), Topics: s.TopicStats(),
		PeersByVersion: map[string]map[string]int{}, Clients: []ClientStatus{},
	}
	st.NotReady = strings.Join(notReady, "; ")
	st.SessionCount = len(st.Sessions)
	if st.Topics == nil {
		st.Topics = []TopicStats{}
	}
	for _, sess := range st.Sessions {
		if st.PeersByVersion[sess.Contract] == nil {
			st.PeersByVersion[sess.Contract] = map[string]int{}
		}
		st.PeersByVersion[sess.Contract][sess.Version]++
	}
	s.mu.RLock()
	for _, name := range sortedKeys(s.contracts) {
		sc := s.contracts[name]
		vs := sortedKeys(sc.versions)
		st.Contracts[name] = vs
		for _, v := range vs {
			c := sc.versions[v].contract
			st.Served = append(st.Served, ServedVersion{Contract: name, Version: v, Fingerprint: c.Fingerprint(), Client: c.Client()})
		}
	}
	clients := append([]*Client(nil), s.clients...)
	s.mu.RUnlock()
	for _, c := range clients {
		st.Clients = append(st.Clients, c.Status())
	}
	sort.SliceStable(st.Clients, func(i, j int) bool { return st.Clients[i].Contract < st.Clients[j].Contract })
	return st
}

// serveStatus answers GET /lockstep/status: JSON for programs, the default,
// and a page a person reads for a browser (Accept: text/html).
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	st := s.Status()
	st.bound()
	if prefersHTML(r) {
		s.writeStatusPage(w, st)
		return
	}
	body, err := json.Marshal(st)
	if err != nil {
		s.fail(w, Errorf(CodeInternal, "status did not encode: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, body)
}
