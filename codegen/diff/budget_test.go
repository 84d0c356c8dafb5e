package diff

import (
	"strings"
	"testing"
)

func TestBudgetExhaustedCountsAsBreaking(t *testing.T) {
	t.Parallel()
	// Twenty properties whose types all change: more pairs than a budget of
	// five steps allows.
	var oldProperties, newProperties []string
	for _, name := range strings.Split("abcdefghijklmnopqrst", "") {
		oldProperties = append(oldProperties, `"`+name+`":{"type":"string"}`)
		newProperties = append(newProperties, `"`+name+`":{"type":"integer"}`)
	}
	oldSchema, err := compileSchema([]byte(`{"properties":{`+strings.Join(oldProperties, ",")+`}}`), oldDocument, "")
	if err != nil {
		t.Fatal(err)
	}
	newSchema, err := compileSchema([]byte(`{"properties":{`+strings.Join(newProperties, ",")+`}}`), newDocument, "")
	if err != nil {
		t.Fatal(err)
	}

	for _, dir := range []Direction{Request, Response} {
		changes := compareCompiled(oldSchema, newSchema, "", dir, 5)
		first := changes[0]
		if len(changes) >= 20 || first.Kind != KindTooComplex || !first.Breaking || first.Path != "" {
			t.Errorf("%s: got %d changes starting with %+v, want fewer than 20 starting with a breaking too_complex at the root",
				dir, len(changes), first)
		}
	}
	if changes := compareCompiled(oldSchema, newSchema, "", Request, maxSteps); len(changes) != 20 {
		t.Errorf("with the full budget got %d changes, want 20", len(changes))
	}
}
