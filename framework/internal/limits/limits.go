// Package limits holds what a server may be made to hold by its peers, and
// each peer's share of it: the per-peer counts (sessions, watchers, calls
// in flight, bodies being read, request rate), the connection bounds of
// the listener (per source, per identity, over all), each divided among
// peers by the rule of framework/internal/share. It is apart from
// the server because these rules are read by every entry (admission,
// topics, the listener) and must be written once; it knows nothing of
// contracts, sessions or HTTP handlers: the server hands it keys and
// counts, and it answers with coded refusals.
package limits

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/conns"
)

// Config is the server's limits with their defaults filled: the fields of
// the public framework.Limits, which converts to it (the two types have
// the same fields, so the compiler keeps them in step). Each field is
// documented there.
type Config struct {
	SessionsPerPeer    int
	WatchersPerSession int
	WatchersPerPeer    int
	InFlightPerPeer    int
	BodiesPerPeer      int
	RequestsPerSecond  float64
	Burst              int
	BatchItems         int
	BodyReadTimeout    time.Duration
	MaxConns           int
	ConnsPerSource     int
	ConnsPerPeer       int
	WatchQueuedBytes   int64
}

// DefaultMaxConns is Config.MaxConns where the file-descriptor limit
// allows it: ten connections for each of 10,000 node agents (a node
// agent's calls, heartbeats and watches share a few), and one for each
// session of a full server (ServerConfig.MaxSessions).
const DefaultMaxConns = 100000

// Fill fills the defaults of c's zero fields for a server of maxSessions
// sessions, and returns what is inconsistent.
func (c *Config) Fill(maxSessions int) error {
	if c.SessionsPerPeer <= 0 {
		c.SessionsPerPeer = max(1, maxSessions/4)
	}
	if c.SessionsPerPeer >= maxSessions && maxSessions > 1 {
		return fmt.Errorf("Limits.SessionsPerPeer (%d) must be below MaxSessions (%d), so that no peer can take them all", c.SessionsPerPeer, maxSessions)
	}
	if c.WatchersPerSession <= 0 {
		c.WatchersPerSession = 256
	}
	if c.WatchersPerPeer <= 0 {
		c.WatchersPerPeer = 4096
	}
	if c.InFlightPerPeer <= 0 {
		c.InFlightPerPeer = 8192
	}
	if c.BodiesPerPeer <= 0 {
		c.BodiesPerPeer = 1024
	}
	if c.RequestsPerSecond <= 0 {
		c.RequestsPerSecond = 100000
	}
	if c.Burst <= 0 {
		c.Burst = 20000
	}
	if c.BatchItems <= 0 {
		c.BatchItems = 1000
	}
	if c.BodyReadTimeout <= 0 {
		c.BodyReadTimeout = 10 * time.Second
	}
	if c.WatchQueuedBytes <= 0 {
		c.WatchQueuedBytes = 4 << 20
	}
	c.fillConns()
	if c.WatchersPerSession > c.WatchersPerPeer {
		return errors.New("Limits.WatchersPerSession must not exceed WatchersPerPeer")
	}
	return nil
}

// fillConns fills the connection bounds: MaxConns within three quarters
// of the process's file-descriptor limit, so that connections cannot use
// the descriptors up and stall the accept loop for every peer.
func (c *Config) fillConns() {
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
		if n := conns.OpenFileLimit(); n > 0 {
			c.MaxConns = min(c.MaxConns, max(1, n/4*3))
		}
	}
	if c.ConnsPerSource <= 0 {
		c.ConnsPerSource = max(1, c.MaxConns/2)
	}
	c.ConnsPerSource = min(c.ConnsPerSource, c.MaxConns)
	if c.ConnsPerPeer <= 0 {
		c.ConnsPerPeer = max(1, c.MaxConns/4)
	}
	c.ConnsPerPeer = min(c.ConnsPerPeer, c.MaxConns)
}

// Name names one of a server's bounds: the limit label of
// lockstep_limit_refusals_total, so an operator sees which bound is being
// hit (docs/operations.md says what each one means and what to alert on).
type Name string

const (
	Rate                Name = "rate"                   // Limits.RequestsPerSecond and Burst
	InFlightPerPeer     Name = "in_flight_per_peer"     // Limits.InFlightPerPeer
	InFlightPerSession  Name = "in_flight_per_session"  // ServerConfig.MaxInFlightPerSession
	Sessions            Name = "sessions"               // ServerConfig.MaxSessions
	SessionsPerPeer     Name = "sessions_per_peer"      // Limits.SessionsPerPeer
	WatchersPerSession  Name = "watchers_per_session"   // Limits.WatchersPerSession
	WatchersPerPeer     Name = "watchers_per_peer"      // Limits.WatchersPerPeer
	WatchersPerTopic    Name = "watchers_per_topic"     // WithMaxWatchers
	WatchQueuedBytes    Name = "watch_queued_bytes"     // Limits.WatchQueuedBytes: a stream closed with an overflow frame
	WatchQueuedKeys     Name = "watch_queued_keys"      // twice WithMaxKeys dirty keys: a stream closed with an overflow frame
	TopicKeys           Name = "topic_keys"             // WithMaxKeys
	TopicBytes          Name = "topic_bytes"            // WithMaxBytes
	TopicKeysPerWriter  Name = "topic_keys_per_writer"  // WithMaxKeysPerWriter
	TopicBytesPerWriter Name = "topic_bytes_per_writer" // WithMaxBytesPerWriter
	Conns               Name = "conns"                  // Limits.MaxConns: a connection closed as it is accepted
	ConnsPerSource      Name = "conns_per_source"       // Limits.ConnsPerSource: the same
	ConnsPerPeer        Name = "conns_per_peer"         // Limits.ConnsPerPeer: resource_exhausted, the connection closed
	BodiesPerPeer       Name = "bodies_per_peer"        // Limits.BodiesPerPeer
	BatchItems          Name = "batch_items"            // Limits.BatchItems or a method's maxItems
	MultiCalls          Name = "multi_calls"            // MaxMultiCalls
	BodyBytes           Name = "body_bytes"             // ServerConfig.MaxBodyBytes
	BodyReadTimeout     Name = "body_read_timeout"      // Limits.BodyReadTimeout
	HelloBytes          Name = "hello_bytes"            // handshake.MaxHelloBytes
	NameBytes           Name = "name_bytes"             // handshake.MaxNameBytes
	Offers              Name = "offers"                 // handshake.MaxOffers
)

// The shares of a topic's watchers (docs/security.md, "Shared bounds"),
// and what one watcher may name.
const (
	WatchersPerTopicPerPeer Name = "watchers_per_topic_per_peer" // WithMaxWatchersPerPeer
	SelectorBytes           Name = "selector_bytes"              // MaxSelectorValueBytes
)

// All are every limit, so that each one's counter is exported from the
// start (at 0): an alert on its rate then sees the first refusal.
var All = []Name{Rate, InFlightPerPeer, InFlightPerSession, Sessions,
	SessionsPerPeer, WatchersPerSession, WatchersPerPeer, WatchersPerTopic, WatchersPerTopicPerPeer, SelectorBytes,
	WatchQueuedBytes, WatchQueuedKeys, TopicKeys, TopicBytes,
	TopicKeysPerWriter, TopicBytesPerWriter, Conns, ConnsPerSource, ConnsPerPeer, BodiesPerPeer, BatchItems, MultiCalls,
	BodyBytes, BodyReadTimeout, HelloBytes, NameBytes, Offers}

// Counter counts a refusal for going over a limit (the server's metrics);
// nil counts nothing.
type Counter func(Name)

// Refuse is the error of an entry refused for going over l, counted by
// count. Every limit refusal is made here, so none goes uncounted, and
// each names its limit in its details ({"limit": "watchers_per_peer"},
// the value of lockstep_limit_refusals_total's label), for a program to
// read where the message says it in prose.
func Refuse(count Counter, l Name, code apierror.Code, format string, args ...any) *apierror.Error {
	if count != nil {
		count(l)
	}
	return apierror.Errorf(code, format, args...).WithDetails(map[string]string{"limit": string(l)})
}
