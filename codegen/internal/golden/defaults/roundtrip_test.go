package defaults

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

// TestDefaultsStayOut checks that absent members stay absent after a round
// trip, while the accessors return the schema's defaults.
func TestDefaultsStayOut(t *testing.T) {
	s := roundtrip.Check[Settings](t, Contract, "Settings", `{"required": 1}`)
	if s.Replicas != nil || s.Tags != nil || s.Limits != nil || !s.Fallback.IsZero() {
		t.Errorf("a default was written into the decoded value: %+v", s)
	}
	if s.GetReplicas() != 3 || s.GetRatio() != 0.5 || s.GetName() != "unnamed" || !s.GetEnabled() || s.GetMode() != SettingsModeSafe {
		t.Errorf("scalar defaults: %v %v %q %v %v", s.GetReplicas(), s.GetRatio(), s.GetName(), s.GetEnabled(), s.GetMode())
	}
	if tags := s.GetTags(); len(tags) != 2 || tags[1] != "b" {
		t.Errorf("tags default: %v", tags)
	}
	if l := s.GetLabels(); l["team"] != "core" {
		t.Errorf("labels default: %v", l)
	}
	if c := s.GetLimits().CPU; c == nil || *c != "100m" || s.GetLimits().Memory != nil {
		t.Errorf("limits default: %+v", s.GetLimits())
	}
	if !s.GetFallback().IsNull() {
		t.Errorf("fallback default: %v", s.GetFallback())
	}
	if !s.GetSince().Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("since default: %v", s.GetSince())
	}
	set := roundtrip.Check[Settings](t, Contract, "Settings", `{"required": 1, "replicas": 0, "enabled": false, "fallback": "x", "tags": []}`)
	if set.GetReplicas() != 0 || set.GetEnabled() || len(set.GetTags()) != 0 {
		t.Errorf("set values must win over defaults: %+v", set)
	}
	if f, ok := set.GetFallback().Get(); !ok || f != "x" {
		t.Errorf("fallback: %v", set.GetFallback())
	}
	var nilSettings *Settings
	if nilSettings.GetReplicas() != 3 {
		t.Error("accessors on a nil message must return the default")
	}
}
