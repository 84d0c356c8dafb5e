package framework

import (
	"time"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/internal/wire"
)

// The server's half of the handshake (POST /lockstep/handshake), its
// heartbeats (POST /lockstep/heartbeat) and its session closes (DELETE
// /lockstep/session) are admission and the session table alone, so
// framework/internal/admit serves them whole (admit.Gate.ServeHello,
// ServeHeartbeat, ServeClose); the server gives it what a hello is
// negotiated against (negotiation).

// negotiation is what s serves of contract, as a hello is negotiated against
// it (handshake.Negotiate, which admit.Gate gives the server's draining
// state); ok is false when s serves no such contract.
func (s *Server) negotiation(contract string) (srv handshake.Server, ok bool) {
	sc := s.lookup(contract)
	if sc == nil {
		return handshake.Server{}, false
	}
	var client string
	for _, sv := range sc.versions {
		client = sv.contract.Client()
	}
	return handshake.Server{
		Contract:    sc.name,
		Component:   s.cfg.Component,
		Client:      client,
		Release:     s.cfg.Release,
		Offers:      sc.offers(),
		PeerRelease: s.cfg.PeerRelease[sc.name],
	}, true
}

// topicWriterReport is what a heartbeat's answer says of a topic's
// writer, which the client's heartbeat senders read: see package wire.
type topicWriterReport = wire.TopicWriterReport

// encodeTimeout is the deadline header's format, which a client writes
// (and a server reads with wire.DecodeTimeout).
func encodeTimeout(d time.Duration) string { return wire.EncodeTimeout(d) }
