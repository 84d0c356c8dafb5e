package enums

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Enums]("Enums", `{"phase": "Pending"}`,
			`{"phase": "Failed", "priority": -1, "maybe": null, "odd": "", "shared": "red", "more": ["green", "blue"]}`,
			`{"phase": "Running", "priority": 10, "maybe": "on", "odd": "Already Spaced"}`,
			`{"phase": "Succeeded", "maybe": null, "odd": "a-b"}`),
		difftest.For[Color]("Color", `"red"`, `"blue"`),
	)
}
