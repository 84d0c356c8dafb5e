package handshake

import (
	"encoding/json"
	"fmt"
	"time"
)

// Offer is one (version, fingerprint) a side can speak. A side in lockstep
// mode offers exactly one; in fork mode it also offers the versions of its
// fork window.
type Offer struct {
	// Version is the contract version as its contract file spells it.
	Version string `json:"version"`
	// Fingerprint is that version's [Fingerprint].
	Fingerprint string `json:"fingerprint"`
}

// Hello is the body of POST /lockstep/handshake, sent by a client.
type Hello struct {
	// Contract is the name of the contract the client wants to speak.
	Contract string `json:"contract"`
	// Component is the client's component name; it must be the contract's
	// client.
	Component string `json:"component"`
	// Instance is the client process's random id, chosen at start. A new
	// handshake from the same instance replaces its earlier session.
	Instance string `json:"instance"`
	// Release is the client binary's own version.
	Release string `json:"release"`
	// Offers lists what the client can speak, any order.
	Offers []Offer `json:"offers"`
	// PeerRelease optionally constrains the server's release
	// (hashicorp/go-version syntax, e.g. ">= 1.31, < 1.32").
	PeerRelease string `json:"peerRelease,omitempty"`
}

// Peer identifies the other side of a session.
type Peer struct {
	// Component is the peer's component name.
	Component string `json:"component"`
	// Instance is the peer process's random id.
	Instance string `json:"instance"`
	// Release is the peer binary's own version.
	Release string `json:"release"`
}

// Welcome is the 200 answer to a hello: the session is open.
type Welcome struct {
	// Session is the opaque token the client sends on every call.
	Session string `json:"session"`
	// Version is the agreed contract version.
	Version string `json:"version"`
	// Fingerprint is the agreed version's fingerprint.
	Fingerprint string `json:"fingerprint"`
	// Peer is the server.
	Peer Peer `json:"peer"`
	// Heartbeat is how often the client should renew the session when idle.
	Heartbeat Duration `json:"heartbeat"`
	// TTL is how long the server keeps a session nobody renews.
	TTL Duration `json:"ttl"`
}

// Agreement is what two sides settled on; it is fixed for a session's life.
type Agreement struct {
	// Version is the agreed version, as the server spells it.
	Version string `json:"version"`
	// Fingerprint is the agreed version's fingerprint, equal on both sides.
	Fingerprint string `json:"fingerprint"`
}

// Duration is a time.Duration that travels as a Go duration string ("1s").
type Duration time.Duration

// MarshalJSON encodes d as a string such as "1.5s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON decodes a Go duration string. Like encoding/json itself, it
// leaves d unchanged for a JSON null.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"1s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}
