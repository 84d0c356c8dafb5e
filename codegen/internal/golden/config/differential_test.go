package config

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Config]("Config", file, `{"services": {}}`,
			`{"services": {"s": {"image": "x", "restart": "on-failure", "deploy": {"replicas": 1}}}, "x-top": 1}`),
	)
}
