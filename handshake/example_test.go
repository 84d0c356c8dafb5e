package handshake_test

import (
	"encoding/json"
	"fmt"

	"github.com/lockstep-dev/lockstep/handshake"
)

// nodestatus returns the nodestatus contract at a version, with the Ack
// message it answers with; v2 added a field to it.
func nodestatus(v string) *handshake.Contract {
	ack := `{"type":"object","properties":{"accepted":{"type":"boolean"}}}`
	if v == "2.0.0" {
		ack = `{"type":"object","properties":{"accepted":{"type":"boolean"},"generation":{"type":"integer"}}}`
	}
	return &handshake.Contract{
		Name: "nodestatus", Version: v, Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{"ReportStatus": {Request: "NodeStatus", Response: "Ack"}},
		Schemas: map[string]json.RawMessage{
			"NodeStatus": json.RawMessage(`{"type":"object","properties":{"nodeName":{"type":"string"}}}`),
			"Ack":        json.RawMessage(ack),
		},
	}
}

// A node controller still at nodestatus 1.0.0 meets two kubelets: one in fork
// mode, which also speaks 1.0.0, and one that speaks only 2.0.0.
func ExampleNegotiate() {
	v1, err := nodestatus("1.0.0").Offer()
	if err != nil {
		panic(err)
	}
	v2, err := nodestatus("2.0.0").Offer()
	if err != nil {
		panic(err)
	}
	server := handshake.Server{
		Contract: "nodestatus", Component: "nodecontroller", Client: "kubelet",
		Release: "1.31.0", Offers: []handshake.Offer{v1},
	}

	forked := handshake.Hello{Contract: "nodestatus", Component: "kubelet", Instance: "a1",
		Release: "1.32.0", Offers: []handshake.Offer{v2, v1}}
	agreement, refusal := handshake.Negotiate(server, forked)
	fmt.Println("fork mode:", agreement.Version, refusal == nil)

	upgraded := handshake.Hello{Contract: "nodestatus", Component: "kubelet", Instance: "b2",
		Release: "1.32.0", Offers: []handshake.Offer{v2}}
	_, refusal = handshake.Negotiate(server, upgraded)
	fmt.Println(refusal.Code, refusal.Reason)
	fmt.Println(refusal.Message)
	// Output:
	// fork mode: 1.0.0 true
	// incompatible_peer version_mismatch
	// nodecontroller speaks nodestatus 1.0.0; kubelet offers 2.0.0: upgrade nodecontroller or run kubelet with fork mode
}

// Annotations do not reach the fingerprint; the wire form does.
func ExampleFingerprint() {
	c := nodestatus("1.0.0")
	before, _ := handshake.Fingerprint(c)

	c.Schemas["Ack"] = json.RawMessage(`{"title":"Ack","description":"Whether the status was taken.",
		"type":"object","properties":{"accepted":{"type":"boolean","description":"true once stored"}}}`)
	documented, _ := handshake.Fingerprint(c)

	c.Methods["ReportStatus"] = handshake.Method{Request: "NodeStatus", Response: "Ack", Idempotent: true}
	idempotent, _ := handshake.Fingerprint(c)

	fmt.Println(before)
	fmt.Println(documented == before, idempotent == before)
	// Output:
	// lsfp1:7dbd5f5d2da7f20321f1317adece5a2f1898e3eec86450b00b72ff0ecb97351e
	// true false
}
