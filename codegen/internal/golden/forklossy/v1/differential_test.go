package v1

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Status]("Status", `{"node": "n", "ready": true}`,
			`{"node": "n", "ready": false, "labels": {"zone": "a"}, "address": {"ip": "10.0.0.1", "port": 10250}}`),
		difftest.For[Address]("Address", `{"ip": "10.0.0.1"}`),
		difftest.For[Ack]("Ack", `{"ok": true}`),
	)
}
