package faithful

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Settings]("Settings", `{}`,
			`{"compact": true, "retries": "many", "mode": "fast", "level": "low", "limit": 3, "labels": {"a": "b"}}`,
			`{"compact": "auto", "retries": 1, "limit": "any string", "labels": [1, 2]}`,
			`{"limit": null, "labels": null}`))
}

// TestDefaults checks the accessors of union defaults, and that a default
// its own enum refuses gets none.
func TestDefaults(t *testing.T) {
	var s Settings
	if raw := s.GetCompact().Raw(); string(raw) != `"auto"` {
		t.Errorf("GetCompact() = %s", raw)
	}
	if n, err := s.GetRetries().AsInteger(); err != nil || n != 3 {
		t.Errorf("GetRetries() = %v, %v", n, err)
	}
	v := roundtrip.Check[Settings](t, Contract, "Settings", `{"compact": false, "retries": "x"}`)
	if b, err := v.GetCompact().AsBoolean(); err != nil || b {
		t.Errorf("GetCompact() of a set member = %v, %v", b, err)
	}
	if _, ok := any(&s).(interface{ GetMode() SettingsMode }); ok {
		t.Error("a default that is not a value of its enum got an accessor")
	}
}

// TestNoTypeStated checks that schemas stating no type admit values of
// every type, as jsonschema/v5 does, and keep them.
func TestNoTypeStated(t *testing.T) {
	v := roundtrip.Check[Settings](t, Contract, "Settings", `{"limit": "text", "labels": 7}`)
	limit, _ := v.Limit.Get()
	if s, err := limit.AsString(); err != nil || s != "text" {
		t.Errorf("limit: %v, %v", s, err)
	}
	roundtrip.Check[Settings](t, Contract, "Settings", `{"limit": 10, "labels": {"a": "b"}}`)
	for _, in := range []string{`{"limit": 11}`, `{"labels": {"a": 1}}`, `{"level": 5}`} {
		if err := Contract.ValidateJSON("Settings", []byte(in)); err == nil {
			t.Errorf("%s: valid", in)
		}
	}
}
