package suite

import (
	"encoding/json"
	"testing"
)

// TestRoundTripSeesChanges checks that the round-trip comparison tells
// JSON values apart, numbers by value and members by presence.
func TestRoundTripSeesChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		// data is the input, value what it decoded to, changed whether the
		// encoding of value is another JSON value.
		data    string
		value   any
		changed bool
	}{
		{`{"a": 1.50, "b": [null]}`, map[string]any{"a": 1.5, "b": []any{nil}}, false},
		{`{"a": 1}`, map[string]any{"a": 1, "b": nil}, true},
		{`{"a": null}`, map[string]any{}, true},
		{`[1, 2]`, []int{2, 1}, true},
		{`"x"`, "x", false},
		{`1e2`, 100, false},
		{`1`, json.Number("1.0000000000000000001"), true},
	}
	for _, tt := range tests {
		if got := roundTrip([]byte(tt.data), tt.value) != ""; got != tt.changed {
			t.Errorf("%s → %v: changed %v, want %v", tt.data, tt.value, got, tt.changed)
		}
	}
}
