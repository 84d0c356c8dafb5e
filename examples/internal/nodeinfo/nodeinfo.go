// Package nodeinfo is the examples' contract, described in Go by hand (it
// hashes to the fingerprint the generator would give the same contract):
// an agent reports its node to a controller.
package nodeinfo

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Contract is nodeinfo 1.0.0: server controller, client agent.
var Contract = framework.MustContract(handshake.Contract{
	Name: "nodeinfo", Version: "1.0.0", Server: "controller", Client: "agent",
	Methods: map[string]handshake.Method{"Report": {Request: "NodeReport", Response: "Ack", Idempotent: true}},
	Topics:  map[string]handshake.Topic{},
	Schemas: map[string]json.RawMessage{
		"NodeReport": json.RawMessage(`{"type":"object","additionalProperties":false,"required":["node","ready"],
			"properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"}}}`),
		"Ack": json.RawMessage(`{"type":"object","additionalProperties":false,"required":["seen"],
			"properties":{"seen":{"type":"integer","minimum":0}}}`),
	},
})

// NodeReport is what an agent reports.
type NodeReport struct {
	Node  string `json:"node"`
	Ready bool   `json:"ready"`
}

// Ack counts the reports the controller has seen.
type Ack struct {
	Seen int64 `json:"seen"`
}

// Register serves Report on srv, counting reports.
func Register(srv *framework.Server) {
	var seen atomic.Int64
	framework.HandleUnary(srv, Contract, "Report", func(context.Context, *NodeReport) (*Ack, error) {
		return &Ack{Seen: seen.Add(1)}, nil
	})
}

// Report calls Report through c.
func Report(ctx context.Context, c *framework.Client, r *NodeReport) (*Ack, error) {
	return framework.CallUnary[NodeReport, Ack](ctx, c, "Report", r)
}
