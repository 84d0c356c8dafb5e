package caseinsensitive

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1, CaseInsensitive: true},
		difftest.For[ExtenderArgs]("ExtenderArgs", `{"pod": {"metadata": {"name": "p"}}, "nodenames": ["a", "b"]}`,
			`{"Pod": {"metadata": {}}, "NodeNames": ["a"]}`),
		difftest.For[ExtenderFilterResult]("ExtenderFilterResult", `{"nodenames": null, "failedNodes": {"c": "full"}, "error": ""}`,
			`{"NodeNames": ["a"], "FailedNodes": null, "Error": "x"}`),
		difftest.For[Strict]("Strict", `{}`, `{"name": "x", "Name": 1}`),
	)
}
