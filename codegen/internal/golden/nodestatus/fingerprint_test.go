package nodestatus

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/handshake"
)

// TestFingerprintMatchesContractFile checks that the generated descriptor,
// with its indented bundles, has the fingerprint of the contract file's
// model, and that a contract described by hand with the same bundles does
// too.
func TestFingerprintMatchesContractFile(t *testing.T) {
	c, err := contract.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	model := c.Handshake()
	want, err := handshake.Fingerprint(&model)
	if err != nil {
		t.Fatal(err)
	}
	if got := Contract.Fingerprint(); got != want {
		t.Errorf("generated descriptor has fingerprint %s, the contract file %s", got, want)
	}
	byHand := handshake.Contract{
		Name: "nodestatus", Version: "2.0.0", Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{
			"ReportBench":       {Request: "BenchNodeStatus", Response: "Ack"},
			"ReportPodStatuses": {Request: "PodStatus", Response: "Ack", Batch: true},
			"ReportStatus":      {Request: "NodeStatus", Response: "Ack", Idempotent: true},
		},
		Topics: map[string]handshake.Topic{
			"NodeHealth": {Object: "NodeStatus", Key: "nodeName", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
		},
		Schemas: model.Schemas,
	}
	if got, _ := handshake.Fingerprint(&byHand); got != want {
		t.Errorf("the contract described by hand has fingerprint %s, want %s", got, want)
	}
}
