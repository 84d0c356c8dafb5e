package ecmapatterns

import (
	"encoding/json"
	"testing"

	"github.com/lockstep-dev/lockstep/framework"
)

// TestECMAPatternsAreEnforced checks the generated Validate on values each
// pattern refuses or accepts. The differential test does not apply: the
// reference, jsonschema/v5, runs patterns with Go's regexp and does not see
// these (contract.ECMAPatternKey).
func TestECMAPatternsAreEnforced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		// doc is the message, valid whether Validate accepts it.
		doc   string
		valid bool
	}{
		{`{"name": "evaluate", "re2": "abc"}`, true},
		{`{"name": "eval"}`, false},    // the lookahead refuses it
		{`{"name": "Eval"}`, false},    // [a-z]+ refuses it
		{`{"re2": "ABC"}`, false},      // the RE2 pattern
		{`{"count": 3}`, true},         // a member the ECMA pattern names
		{`{"count": "three"}`, false},  // of the wrong type
		{`{"x-count": 3}`, false},      // the lookahead excludes it: additional
		{`{"name": "evaluate"}`, true}, // the remembered answer agrees
	}
	for _, tt := range tests {
		var m Names
		if err := json.Unmarshal([]byte(tt.doc), &m); err != nil {
			if tt.valid {
				t.Errorf("%s does not decode: %v", tt.doc, err)
			}
			continue
		}
		err := m.Validate()
		if (err == nil) != tt.valid {
			t.Errorf("%s: Validate says %v, want valid=%v", tt.doc, err, tt.valid)
		}
		if err != nil && framework.CodeOf(err) != framework.CodeInvalidArgument {
			t.Errorf("%s: %v is not invalid_argument", tt.doc, err)
		}
	}
}
