package nodestatus

import (
	"os"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	bench, err := os.ReadFile("testdata/nodestatus.json")
	if err != nil {
		t.Fatal(err)
	}
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[NodeStatus]("NodeStatus", k8sStatus,
			`{"nodeName": "n", "conditions": [], "capacity": {}, "allocatable": {}, "config": null, "images": null}`),
		difftest.For[BenchNodeStatus]("BenchNodeStatus", string(bench)),
		difftest.For[PodStatus]("PodStatus", `{"uid": "u", "phase": "Running", "podIP": null, "startTime": "2026-11-30T05:00:00Z"}`),
		difftest.For[Ack]("Ack", `{"accepted": true, "generation": 3}`),
	)
}
