package oneoftagged

import (
	"errors"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

func TestRoundTrip(t *testing.T) {
	s := roundtrip.Check[Shape](t, Contract, "Shape", `{"kind": "circle", "radius": 2}`)
	if s.Circle == nil || s.Circle.Radius != 2 || s.Square != nil {
		t.Errorf("decoded %+v", s)
	}
	roundtrip.Check[Shape](t, Contract, "Shape", `{"kind": "square", "side": 1}`)
	e := roundtrip.Check[Event](t, Contract, "Event", `{"type": "PodsMoved", "at": "2026-01-02T03:04:05Z", "pods": ["a"], "why": "extra"}`)
	if e.PodsMoved == nil || len(e.PodsMoved.Pods) != 1 {
		t.Errorf("decoded %+v", e)
	}
	roundtrip.Check[Event](t, Contract, "Event", `{"type": "NodeAdded", "at": "2026-01-02T03:04:05Z", "node": "n1"}`)
	m := roundtrip.Check[Merge](t, Contract, "Merge", `{"type": "env", "vars": {"A": "b"}}`)
	env, err := m.AsEnv()
	if err != nil {
		t.Fatal(err)
	}
	// Env states no type: its Go type is a union of every JSON type.
	if obj, err := env.AsObject(); err != nil || obj.Vars["A"] != "b" {
		t.Errorf("env: %+v, %v", obj, err)
	}
	roundtrip.Check[Merge](t, Contract, "Merge", `{"type": "jq", "path": "a.json"}`)
	roundtrip.Check[Merge](t, Contract, "Merge", `{"type": "http", "scheme": "Bearer", "bearerFormat": "JWT"}`)
}

func TestTaggedUnionErrors(t *testing.T) {
	var s Shape
	if err := s.UnmarshalJSON([]byte(`{"kind": "triangle"}`)); err == nil {
		t.Error("an unknown kind decoded")
	}
	if err := s.UnmarshalJSON([]byte(`{"radius": 1}`)); err == nil {
		t.Error("a shape without kind decoded")
	}
	if _, err := (Shape{}).MarshalJSON(); !errors.Is(err, jsonwire.ErrNoVariant) {
		t.Errorf("empty union encoded: %v", err)
	}
	if _, err := (Shape{Circle: &Circle{}, Square: &Square{}}).MarshalJSON(); err == nil {
		t.Error("a union with two variants set encoded")
	}
	roundtrip.Encode(t, Shape{Square: &Square{Kind: "square", Side: 3}}, `{"kind": "square", "side": 3}`)
}
