package framework

import (
	"context"
	"log/slog"
	"net"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/clienthttp"
	"github.com/lockstep-dev/lockstep/framework/internal/heartbeat"
	"github.com/lockstep-dev/lockstep/framework/internal/probe"
)

// Heartbeats keeps sessions alive for many clients at once: every interval
// it sends one request per endpoint carrying the tokens of all sessions held
// there, skipping sessions that calls renewed anyway. Share one among the
// clients of a process (a node simulator's 10,000 sessions) through
// ClientConfig.Heartbeats; a client without one gets its own.
type Heartbeats struct {
	s *heartbeat.Sender
}

// NewHeartbeats returns a heartbeat sender. A nil logger or clock means
// slog.Default() and the real clock.
func NewHeartbeats(logger *slog.Logger, clock clockwork.Clock) *Heartbeats {
	if logger == nil {
		logger = slog.Default()
	}
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Heartbeats{s: heartbeat.New(heartbeat.Config{Logger: logger, Clock: clock, Probers: processProbers,
		CloseSessions: clienthttp.DeleteSessions, DialError: clienthttp.IsDialError})}
}

// add starts heartbeating sess for e.
func (h *Heartbeats) add(e *endpoint, sess *clientSession) {
	h.s.Add(beatEndpoint(e), beatMember{e, sess}, sess.heartbeat, sess.ttl)
}

// remove stops heartbeating sess.
func (h *Heartbeats) remove(e *endpoint, sess *clientSession) {
	h.s.Remove(beatEndpoint(e), beatMember{e, sess})
}

func beatEndpoint(e *endpoint) heartbeat.Endpoint {
	return heartbeat.Endpoint{URL: e.url, Addr: e.addr, Client: e.c.hc}
}

// beatMember is a session as its heartbeats see it (heartbeat.Member).
type beatMember struct {
	e    *endpoint
	sess *clientSession
}

func (m beatMember) Token() string        { return m.sess.token }
func (m beatMember) LastCall() int64      { return m.e.lastCall.Load() }
func (m beatMember) WatchesWriters() bool { return m.e.c.writerWatchers.Load() > 0 }
func (m beatMember) Resync()              { m.e.c.resync() }
func (m beatMember) MarkClosed() bool     { return !m.sess.closed.Swap(true) }

func (m beatMember) LearnTopicWriters(reports []topicWriterReport) {
	m.e.c.learnTopicWriters(m.sess, reports)
}

// Lose takes the session out of routing: the endpoint is unreachable,
// draining, or, for a session the server no longer holds, handshakes
// again.
func (m beatMember) Lose(why heartbeat.Loss, err error) {
	state := stateUnreachable
	switch why {
	case heartbeat.Draining:
		state = stateDraining
	case heartbeat.Gone:
		state = stateConnecting
	}
	m.e.lose(m.sess, state, err)
}

// Backoff shapes the delays between reconnect attempts: gRPC's connection
// backoff (exponential, with jitter) with much smaller constants, because
// in lockstep an upgrade's downtime should stay close to the skew between
// the two sides, not to a backoff ceiling. Jitter keeps thousands of
// clients from arriving together. Its fields (Base 5ms, Max 100ms,
// Multiplier 1.6, Jitter 0.2 by default) and Delay are documented with
// the process's probers, which spend the backoffs of the endpoints that
// wait for an address (framework/internal/probe). It is an alias of that
// package's type, not a copy, so that the probers read a client's backoff
// as it was given.
type Backoff = probe.Backoff

// processProbers is the process's probers: one per address, however many
// clients, transports and heartbeat senders there are, as with a
// connection pool (framework/internal/probe says how they notice a
// killed server and pace the dials of an absent one).
var processProbers = probe.NewTable(clockwork.NewRealClock(), probe.Dial)

// probers is a table of probers: the process's, or a test's own.
type probers = probe.Table

// dialAddr is the dial address of an endpoint URL ("host:port").
var dialAddr = probe.DialAddr

// ProbeStats is what the process's probers did at the endpoint URL so
// far: dials (checks' and reconnect waiters'), checks that a peer's close
// started, and checks that found nothing listening. With the handshakes an
// observer sees refused ([ClientObserver]), the dials counts every dial
// the process made to an address while nothing listened there, as a
// benchmark of the reconnect gap reports beside it.
func ProbeStats(rawURL string) (dials, checks, crashes int64) {
	st := processProbers.StatsOf(dialAddr(rawURL))
	return st.Dials.Load(), st.Checks.Load(), st.Crashes.Load()
}

// backoffWithDefaults returns b with its zero fields given their defaults.
var backoffWithDefaults = probe.WithDefaults

// watchedDial wraps a dial function so that its connections report their
// peer's close to the process's probers. The default transport dials
// through it, plain and under TLS ([Credentials.Transport] puts TLS over
// it).
func watchedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return probe.WatchedDial(processProbers, dial)
}
