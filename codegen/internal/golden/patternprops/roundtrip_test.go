package patternprops

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"env": {}, "limits": {"default": 1}, "extensible": {}}`,
		`{"env": {"HOME": "/root", "GO_PATH": "x"}, "limits": {"default": 1, "cpu": 2, "mem": 3}, "extensible": {"name": "n", "x-note": {"a": 1}, "other": null}}`,
	} {
		roundtrip.Check[Patterns](t, Contract, "Patterns", in)
	}
	p := roundtrip.Check[Patterns](t, Contract, "Patterns", `{"limits": {"default": 1, "cpu": 2}}`)
	if p.Limits.Default != 1 || p.Limits.AdditionalProperties["cpu"] != 2 {
		t.Errorf("decoded %+v", p.Limits)
	}
	if err := Contract.ValidateJSON("Patterns", []byte(`{"env": {"lower": "x"}}`)); err == nil {
		t.Error("a name outside the pattern validated")
	}
}
