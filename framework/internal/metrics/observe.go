package metrics

import (
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// ServerObserver is a server's observer of handshakes and calls
// (framework.ServerObserver has the same methods).
type ServerObserver interface {
	Handshake(contract, outcome, reason string)
	Call(contract, version, method string, code apierror.Code, took time.Duration)
}

// ServerEvents records a server's handshakes and calls in a [Set]: it is
// a ServerObserver.
type ServerEvents struct{ m *Set }

// Server returns the observer that records a server's events in m.
func (m *Set) Server() ServerEvents { return ServerEvents{m} }

// Handshake counts a handshake's outcome, under the labels the watched
// servers declare.
func (o ServerEvents) Handshake(contract, outcome, reason string) {
	contract, _, _ = o.m.served(contract, "", "")
	o.m.handshakes.WithLabelValues("server", contract, outcome, ReasonLabel(reason)).Inc()
}

// Call counts a finished call and its latency, under the labels the
// watched servers declare.
func (o ServerEvents) Call(contract, version, method string, code apierror.Code, took time.Duration) {
	contract, version, method = o.m.served(contract, version, method)
	o.m.calls.WithLabelValues("server", contract, version, method, codeLabel(code)).Inc()
	o.m.latency.WithLabelValues("server", contract, method).Observe(took.Seconds())
}

// ClientEvents records a client's handshakes, blocked calls and calls in
// a [Set]: it is a framework.ClientObserver.
type ClientEvents struct{ m *Set }

// Client returns the observer that records a client's events in m.
func (m *Set) Client() ClientEvents { return ClientEvents{m} }

// Handshake counts a handshake with one endpoint.
func (o ClientEvents) Handshake(contract, _, outcome, reason string) {
	o.m.handshakes.WithLabelValues("client", contract, outcome, ReasonLabel(reason)).Inc()
}

// Blocked observes how long a call waited for a compatible peer.
func (o ClientEvents) Blocked(contract string, waited time.Duration) {
	o.m.blocked.WithLabelValues(contract).Observe(waited.Seconds())
}

// Call counts a finished call and its latency as its caller saw it.
func (o ClientEvents) Call(contract, version, method string, code apierror.Code, took time.Duration) {
	o.m.calls.WithLabelValues("client", contract, version, method, codeLabel(code)).Inc()
	o.m.latency.WithLabelValues("client", contract, method).Observe(took.Seconds())
}

// TeeServer sends a server's events to two observers, A then B.
type TeeServer struct{ A, B ServerObserver }

// Handshake sends the handshake to A and B.
func (t TeeServer) Handshake(contract, outcome, reason string) {
	t.A.Handshake(contract, outcome, reason)
	t.B.Handshake(contract, outcome, reason)
}

// Call sends the call to A and B.
func (t TeeServer) Call(contract, version, method string, code apierror.Code, took time.Duration) {
	t.A.Call(contract, version, method, code, took)
	t.B.Call(contract, version, method, code, took)
}
