package nullmessages

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[MaybeSix]("MaybeSix", `null`, `6`),
		difftest.For[MaybeObject]("MaybeObject", `null`, `{"a": 1}`),
		difftest.For[MaybeName]("MaybeName", `null`, `"abc"`),
		difftest.For[OnlyNull]("OnlyNull", `null`),
		difftest.For[MaybeRef]("MaybeRef", `null`, `2`),
		difftest.For[MaybePoint]("MaybePoint", `null`, `{"x": 3}`),
		difftest.For[MaybeDefined]("MaybeDefined", `null`, `{"a": "b"}`),
	)
}
