package oneofuntagged

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// TestDifferential compares the generated decoders and validators with
// jsonschema/v5 on a corpus grown from valid instances.
func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Holder]("Holder", `{}`,
			`{"port": 80, "target": {"name": "web"}, "choice": {"a": "x"}, "maybe": null, "exclusive": {"x": 1}, "removable": null, "mail": null}`,
			`{"port": "http", "target": {"selector": {"app": "web"}}, "choice": ["a", "b"], "maybe": {"name": "n"}, "exclusive": {"y": 2}, "removable": {"except": ["a"]}, "mail": {"enabled": true, "profile": "p"}}`,
			`{"removable": true, "mail": {"enabled": false, "profile": null}}`),
	)
}
