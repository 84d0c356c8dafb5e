package caseinsensitive

import (
	"encoding/json"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	roundtrip.Check[ExtenderArgs](t, Contract, "ExtenderArgs", `{"pod": {"metadata": {"name": "p"}}, "nodenames": ["a", "b"]}`)
	roundtrip.Check[ExtenderFilterResult](t, Contract, "ExtenderFilterResult", `{"nodenames": null, "failedNodes": {"c": "full"}, "error": ""}`)
}

// TestGoFieldNames decodes what the Kubernetes scheduler extender sends:
// Go field names without JSON tags.
func TestGoFieldNames(t *testing.T) {
	var args ExtenderArgs
	if err := json.Unmarshal([]byte(`{"Pod": {"metadata": {}}, "NodeNames": ["a"]}`), &args); err != nil {
		t.Fatal(err)
	}
	if names, ok := args.Nodenames.Get(); !ok || len(names) != 1 || args.Pod == nil || len(args.AdditionalProperties) != 0 {
		t.Errorf("decoded %+v", args)
	}
	roundtrip.Encode(t, args, `{"pod": {"metadata": {}}, "nodenames": ["a"]}`)
	var strict Strict
	if err := json.Unmarshal([]byte(`{"Name": "x"}`), &strict); err != nil {
		t.Fatal(err)
	}
	if strict.Name != nil || string(strict.AdditionalProperties["Name"]) != `"x"` {
		t.Errorf("a case-sensitive message matched a differently cased name: %+v", strict)
	}
}
