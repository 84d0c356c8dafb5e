package status

import (
	"encoding/json"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

// Session states in [Session.State].
const (
	// Live: renewed within the last two heartbeat intervals.
	Live = "live"
	// Late: not renewed for two heartbeat intervals or more; it lapses
	// when its TTL passes.
	Late = "late"
	// Draining: the server is draining and the peer has been told.
	Draining = "draining"
)

// Session describes a session for hooks and the status page.
type Session struct {
	Contract string
	// Version is the agreed version.
	Version string
	Peer    handshake.Peer
	// Identity is the identity of the session's owner, as its verified
	// client certificate names it (lockstep://kubelet/node-1), "" without
	// mutual TLS. Unlike Peer, which the peer's hello claims, it names who
	// holds the session: the identity a server's limits charge.
	Identity string
	// State is [Live], [Late] or [Draining].
	State string
	// Age and Idle are measured on the server's monotonic clock; Since is
	// when the session was opened, on the server's wall clock.
	Age   time.Duration
	Idle  time.Duration
	Since time.Time
}

// sessionJSON is the wire form of [Session].
type sessionJSON struct {
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
func (i Session) MarshalJSON() ([]byte, error) {
	return json.Marshal(sessionJSON{
		Contract: i.Contract, Version: i.Version, Peer: i.Peer, Identity: i.Identity, State: i.State,
		Since: i.Since.Round(time.Millisecond).UTC(),
		Age:   handshake.Duration(i.Age.Round(time.Millisecond)), Idle: handshake.Duration(i.Idle.Round(time.Millisecond)),
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (i *Session) UnmarshalJSON(b []byte) error {
	var w sessionJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*i = Session{Contract: w.Contract, Version: w.Version, Peer: w.Peer, Identity: w.Identity, State: w.State,
		Since: w.Since, Age: time.Duration(w.Age), Idle: time.Duration(w.Idle)}
	return nil
}

// Served is one contract version a server serves.
type Served struct {
	Contract    string `json:"contract"`
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	// Client is the component the contract lets call it.
	Client string `json:"client"`
}

// PeersByVersion counts sessions per contract and agreed version.
func PeersByVersion(sessions []Session) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, sess := range sessions {
		if out[sess.Contract] == nil {
			out[sess.Contract] = map[string]int{}
		}
		out[sess.Contract][sess.Version]++
	}
	return out
}
