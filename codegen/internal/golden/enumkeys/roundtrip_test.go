package enumkeys

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

// The maps are keyed by the enum types: these assignments do not compile
// with string keys.
var (
	_ map[Resource]int64              = Usage{}.Requests
	_ ResourceList                    = map[Resource]string{ResourceCPU: "1"}
	_ map[UsagePhasesKey]string       = Usage{}.Phases
	_ map[string]map[Resource]float64 = Usage{}.Nested
	_ map[string]bool                 = Usage{}.Patterned
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"requests": {}, "limits": {}, "phases": {}, "nested": {}, "patterned": {}, "defaulted": {}}`,
		`{"requests": {"cpu": 2, "gpu": 1, "memory": 0}, "limits": {"memory": "1024", "cpu": "2"},
		  "phases": {"Pending": "a", "Done": "b"}, "nested": {"pod-1": {"cpu": 0.5, "memory": 1}, "pod-2": {}},
		  "patterned": {"abc": true}, "defaulted": {"memory": 3}}`,
	} {
		roundtrip.Check[Usage](t, Contract, "Usage", in)
	}
}

// TestEnumKeysEncodeAsStrings: a value built in Go with the constants
// encodes as the same JSON as encoding/json writes for string keys, sorted.
func TestEnumKeysEncodeAsStrings(t *testing.T) {
	u := Usage{
		Requests: map[Resource]int64{ResourceMemory: 2, ResourceCPU: 1, ResourceGPU: 3},
		Limits:   ResourceList{ResourceGPU: "1"},
		Phases:   map[UsagePhasesKey]string{UsagePhasesKeyRunning: "r"},
	}
	got, err := json.Marshal(&u)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"requests":{"cpu":1,"gpu":3,"memory":2},"limits":{"gpu":"1"},"phases":{"Running":"r"}}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// The same value with string keys, as encoding/json writes it.
	type stringKeyed struct {
		Requests map[string]int64  `json:"requests"`
		Limits   map[string]string `json:"limits"`
		Phases   map[string]string `json:"phases"`
	}
	plain, err := json.Marshal(stringKeyed{
		Requests: map[string]int64{"memory": 2, "cpu": 1, "gpu": 3},
		Limits:   map[string]string{"gpu": "1"},
		Phases:   map[string]string{"Running": "r"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(plain) {
		t.Errorf("enum keys encode as %s, string keys as %s", got, plain)
	}
}

// TestUnknownKeyIsRefused: a member name the enum does not hold decodes
// (as a value of the enum type no constant names) and fails Validate, as
// the schema's propertyNames says.
func TestUnknownKeyIsRefused(t *testing.T) {
	var u Usage
	if err := json.Unmarshal([]byte(`{"requests": {"tpu": 1}}`), &u); err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Requests["tpu"]; !ok {
		t.Fatalf("decoded %v", u.Requests)
	}
	err := u.Validate()
	if err == nil || !strings.Contains(err.Error(), "propertyNames") && !strings.Contains(err.Error(), "must be one of") {
		t.Errorf("a member name outside the enum: %v", err)
	}
	if err := Contract.ValidateJSON("Usage", []byte(`{"requests": {"tpu": 1}}`)); err == nil {
		t.Error("jsonschema/v5 accepted it")
	}
}
