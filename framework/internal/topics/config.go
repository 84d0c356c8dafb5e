package topics

import "time"

// Defaults of a topic's limits (the root package's With* topic options
// name them).
const (
	// DefaultMaxKeys matches the default session limit, so every client
	// instance of a full server can hold a key.
	DefaultMaxKeys = 100000
	// DefaultMaxBytes bounds the bytes of a topic's objects: room for
	// DefaultMaxKeys objects of 2.5 KB (a Kubernetes-like node status is
	// 1.5 KB), where the key bound alone let one writer hold 100,000
	// objects of the largest body each.
	DefaultMaxBytes = 256 << 20
	// DefaultMaxWatchers bounds the watch streams of one topic.
	DefaultMaxWatchers = 10000
	// MaxKeyBytes bounds the length of a key.
	MaxKeyBytes = 1024
	// DefaultTombstones bounds the deleted keys a topic remembers for
	// resuming watchers.
	DefaultTombstones = 10000
	// DefaultTombstoneAge bounds how long it remembers each.
	DefaultTombstoneAge = 5 * time.Minute
)

// Config is a topic's limits.
type Config struct {
	MaxKeys      int           // keys the topic holds
	MaxBytes     int           // bytes of its objects
	WriterKeys   int           // what one writer identity may hold of a client topic's keys
	WriterBytes  int           // and of its bytes
	MaxWatchers  int           // its concurrent watch streams
	PeerWatchers int           // what one peer may hold of MaxWatchers
	Tombstones   int           // deleted keys remembered for resuming watchers
	TombstoneAge time.Duration // and for how long
	Detached     bool          // the server's writer starts detached
}

// WithDefaults returns c with every unset limit at its default: the
// shares a quarter of their bound, and no share over its bound.
func (c Config) WithDefaults() Config {
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxWatchers <= 0 {
		c.MaxWatchers = DefaultMaxWatchers
	}
	if c.PeerWatchers <= 0 {
		c.PeerWatchers = max(1, c.MaxWatchers/4)
	}
	c.PeerWatchers = min(c.PeerWatchers, c.MaxWatchers)
	if c.WriterKeys <= 0 {
		c.WriterKeys = max(1, c.MaxKeys/4)
	}
	if c.WriterBytes <= 0 {
		c.WriterBytes = max(1, c.MaxBytes/4)
	}
	c.WriterKeys, c.WriterBytes = min(c.WriterKeys, c.MaxKeys), min(c.WriterBytes, c.MaxBytes)
	return c
}
