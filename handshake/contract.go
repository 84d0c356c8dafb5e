package handshake

import "encoding/json"

// Role names a side of a contract.
type Role string

// The two sides of every contract.
const (
	RoleServer Role = "server"
	RoleClient Role = "client"
)

// LostWriterPolicy says what happens to a topic's keys when their writer's
// session is lost.
type LostWriterPolicy string

// Lost-writer policies a topic may declare.
const (
	LostWriterDelete LostWriterPolicy = "delete"
	LostWriterKeep   LostWriterPolicy = "keep"
)

// Contract is the wire-relevant model of one contract version: exactly what
// the fingerprint covers. The code generator builds it from a contract file;
// a contract described in Go by hand builds the same value and so hashes to
// the same fingerprint.
type Contract struct {
	// Name is the contract's name, e.g. "nodestatus".
	Name string `json:"contract"`
	// Version is the contract's semantic version, always a string ("2.0.0").
	Version string `json:"version"`
	// Server is the component that serves the contract.
	Server string `json:"server"`
	// Client is the component that calls it.
	Client string `json:"client"`
	// Methods by name.
	Methods map[string]Method `json:"methods"`
	// Topics by name.
	Topics map[string]Topic `json:"topics"`
	// Schemas by message name. Each is a self-contained JSON Schema document:
	// references to other files are already bundled into it, so the document
	// alone defines the wire form of the message.
	Schemas map[string]json.RawMessage `json:"schemas"`
}

// Method is one RPC of a contract.
type Method struct {
	// Request and Response name entries of [Contract.Schemas].
	Request  string `json:"request"`
	Response string `json:"response"`
	// Idempotent methods may be retried after a transport failure.
	Idempotent bool `json:"idempotent"`
	// Batch methods take {"items":[…]} and answer one result per item.
	Batch bool `json:"batch"`
	// MaxItems, for a batch method, bounds the items of one call below the
	// server's own bound (framework Limits.BatchItems); 0 leaves the
	// server's. It enters the fingerprint only when set, so contracts
	// without it keep their fingerprints.
	MaxItems int `json:"maxItems,omitempty"`
	// Path overrides the HTTP path for pinned external peers; empty means
	// the lockstep default /lockstep/<contract>/<version>/<Method>.
	Path string `json:"path"`
}

// Topic is a watchable collection of ephemeral objects, each key with exactly
// one writer.
type Topic struct {
	// Object names the entry of [Contract.Schemas] each object conforms to.
	Object string `json:"object"`
	// Key is the object's field whose value is the key.
	Key string `json:"key"`
	// Writer is the side that writes the topic.
	Writer Role `json:"writer"`
	// LostWriter says what happens to a lost writer's keys.
	LostWriter LostWriterPolicy `json:"lostWriter"`
	// Selectors names the object's top-level scalar members a watcher may
	// select on (?nodeName=node-042 delivers only the objects whose
	// nodeName is node-042). They are a set: the fingerprint hashes them
	// sorted, and only when there are any, so topics without selectors
	// keep their fingerprints.
	Selectors []string `json:"selectors,omitempty"`
}

// HasSelector reports whether the topic declares field among its
// selectors.
func (t Topic) HasSelector(field string) bool {
	for _, s := range t.Selectors {
		if s == field {
			return true
		}
	}
	return false
}

// Offer returns the (version, fingerprint) pair this contract contributes
// to an offer.
func (c *Contract) Offer() (Offer, error) {
	fp, err := Fingerprint(c)
	if err != nil {
		return Offer{}, err
	}
	return Offer{Version: c.Version, Fingerprint: fp}, nil
}
