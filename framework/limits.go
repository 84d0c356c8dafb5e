package framework

import (
	"net"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/limits"
)

// Limits bound what one peer may take of a server, so that no single
// identity can lock the others out or exhaust the server's memory. Zero
// fields take the defaults named on each; the defaults sit above the
// project's own loads (one node-simulator identity holding 10,000 sessions
// heartbeating at 1 Hz, one client making about 36,000 calls a second). Each
// limit is answered with its documented code (docs/security.md) and
// counted in lockstep_limit_refusals_total by limit (docs/operations.md).
//
// A peer is its authenticated identity under mutual TLS. Without it a peer
// is only what it claims, so limits are kept per (claimed component, remote
// IP address): a bound on one misbehaving process, not on an attacker who
// can spread over addresses.
type Limits struct {
	// SessionsPerPeer bounds the live sessions of one peer; default a
	// quarter of ServerConfig.MaxSessions (25,000), and it must stay below
	// MaxSessions so that no peer can take them all. Beyond it a handshake
	// gets resource_exhausted. Since a few peers at their shares would
	// still take them all, the last quarter of MaxSessions is kept for
	// peers that hold few sessions (docs/security.md, "Shared bounds").
	SessionsPerPeer int
	// WatchersPerSession and WatchersPerPeer bound open watch streams;
	// defaults 256 and 4,096 (a topic's own bound, [WithMaxWatchers], is
	// 10,000). Beyond them a watch gets resource_exhausted.
	WatchersPerSession int
	WatchersPerPeer    int
	// InFlightPerPeer bounds the calls and topic writes one peer has
	// running at once, over all its sessions, and the refused hellos it
	// has held with ?wait=; default 8,192
	// (ServerConfig.MaxInFlightPerSession bounds each session). Beyond it a
	// call gets resource_exhausted, unprocessed, and a refused hello its
	// refusal at once.
	InFlightPerPeer int
	// BodiesPerPeer bounds the request bodies one peer has on their way at
	// once, over all its connections and streams: every entry counts from
	// its admission until its body has been read (a hello, a heartbeat's
	// or a session close's list of sessions, a call's, a topic write's, a
	// plain call's request). An honest peer's bodies arrive with their
	// headers, so it has about as many on their way as it makes requests
	// at that instant; a body that stalls holds a stream, a goroutine and
	// its buffers until Limits.BodyReadTimeout, and HTTP/2 multiplies
	// streams by connections (200 connections of 250 stalled hellos from
	// one certificate held about 1 GB). Default 1,024. Beyond it an entry
	// gets resource_exhausted, unprocessed and unread.
	BodiesPerPeer int
	// RequestsPerSecond and Burst bound one peer's request rate (every entry
	// counts once: a handshake, a call or multi-call request, a topic write,
	// a watch, a heartbeat, a session close); defaults 100,000/s with a
	// burst of 20,000. Beyond it a request gets resource_exhausted,
	// unprocessed.
	RequestsPerSecond float64
	Burst             int
	// BatchItems bounds the items of one batch call; default 1,000. A
	// contract may set a lower bound per method (its maxItems). Beyond it
	// the call gets invalid_argument.
	BatchItems int
	// BodyReadTimeout bounds the time to receive a request's whole body,
	// from its headers on, on every path (those that read no body too);
	// default 10s. A body that trickles in slower gets
	// deadline_exceeded and its connection is closed. It also bounds the
	// wait for the rest of a body refused before it was read (see
	// docs/security.md), after which the refusal closes the connection.
	BodyReadTimeout time.Duration
	// MaxConns bounds the connections the server holds open at once, over
	// every source, and ConnsPerSource those of one remote IP address
	// (IPv6: one /64), counted from their accept on, before any request or certificate is
	// read (so a source is an address, not an identity); the last quarter
	// is kept for sources that hold few (docs/security.md, "Shared
	// bounds"). A connection beyond them is closed as it is accepted,
	// unread. Defaults: 100,000, or three quarters of the process's
	// file-descriptor limit where that is lower, so that connections
	// cannot use the descriptors up and stall the accept loop for every
	// peer; and half of MaxConns. [Server.Serve] applies them; a server
	// embedded with [Server.ServeHTTP] is bounded by its own listener.
	MaxConns       int
	ConnsPerSource int
	// ConnsPerPeer bounds the connections one identity holds open, over
	// every source it connects from, counted from the connection's first
	// request that carries a verified client certificate (mutual TLS
	// only: without it a peer has no identity before its requests are
	// read); the last quarter of MaxConns is kept for identities that
	// hold few. A connection beyond it is answered resource_exhausted
	// and closed. Default a quarter of MaxConns.
	ConnsPerPeer int
	// WatchQueuedBytes bounds the bytes of changes a watcher that does not
	// read may have waiting for it (beyond a small socket buffer); default
	// 4 MiB. A watcher over it is closed with an overflow frame; it resumes
	// with a fresh snapshot when it reads again.
	WatchQueuedBytes int64
}

// validate fills the defaults of l's zero fields (framework/internal/limits
// holds them, beside the rules that read them).
func (l *Limits) validate(maxSessions int) error {
	c := limits.Config(*l)
	err := c.Fill(maxSessions)
	*l = Limits(c)
	return err
}

// The root's names of what framework/internal/limits holds, for the
// server's files that read them: aliases, not copies, because that package
// makes every limit refusal and counts it, from the values the server
// holds.
type (
	limit      = limits.Name
	peerLimits = limits.Peers
	peerUsage  = limits.Usage
)

// The limits' names (see limits.Name).
const (
	limitHelloBytes = limits.HelloBytes
	limitNameBytes  = limits.NameBytes
	limitOffers     = limits.Offers
)

// allLimits are every limit, each one's counter exported from the start.
var allLimits = limits.All

// newPeerLimits returns the per-peer counts of a server, counting
// refusals in m (which may be nil).
func newPeerLimits(cfg Limits, maxSessions int, m *Metrics) *peerLimits {
	return limits.NewPeers(limits.Config(cfg), maxSessions, m.limitRefused)
}

// newConnLimiter bounds the connections l accepts by cfg, counting
// refusals in m (which may be nil).
func newConnLimiter(l net.Listener, cfg Limits, m *Metrics) *limits.Listener {
	return limits.NewListener(l, limits.Config(cfg), m.limitRefused)
}

// withConnCharge and connChargeOf put a connection's charge in the
// context of its requests and find it there (see limits.Charge).
var (
	withConnCharge = limits.WithCharge
	connChargeOf   = limits.ChargeOf
)
