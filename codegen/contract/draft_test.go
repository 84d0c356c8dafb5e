package contract

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestDraftOfAgreesWithJSONSchema checks draftOf against the validator the
// runtime ships: jsonschema/v5 must accept exactly the "$schema" URIs draftOf
// knows, and read each as the same draft. The draft is told apart by
// schemas that only one draft (or one group of drafts) accepts.
func TestDraftOfAgreesWithJSONSchema(t *testing.T) {
	uris := []string{
		"http://json-schema.org/schema#",
		"https://json-schema.org/schema",
		"https://json-schema.org/schema#/",
		"http://json-schema.org/draft-04/schema#",
		"https://json-schema.org/draft-04/schema",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-07/schema#/",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft/2020-12/schema#",
		"json-schema.org/draft-07/schema",
		"http://json-schema.org/draft-07/schema#foo",
		"http://json-schema.org/schema/",
		"HTTP://json-schema.org/draft-07/schema#",
		"http://example.com/schema",
	}
	// probes[i] is accepted only by the drafts listed beside it.
	probes := []struct {
		body   string
		drafts []Draft
	}{
		{`"exclusiveMinimum": true, "minimum": 1`, []Draft{Draft4}},
		{`"dependentRequired": 5`, []Draft{Draft4, Draft6, Draft7}},
		{`"prefixItems": 5`, []Draft{Draft4, Draft6, Draft7, Draft2019}},
		{`"items": [{}]`, []Draft{Draft4, Draft6, Draft7, Draft2019}},
		{`"contains": 5`, []Draft{Draft4}},
		{`"if": 5`, []Draft{Draft4, Draft6}},
	}
	compile := func(schema string) error {
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem://s.json", strings.NewReader(schema)); err != nil {
			return err
		}
		_, err := c.Compile("mem://s.json")
		return err
	}
	for _, uri := range uris {
		d, ok := draftOf(uri)
		err := compile(`{"$schema": "` + uri + `"}`)
		if ok != (err == nil) {
			t.Errorf("%q: draftOf knows it = %v, jsonschema/v5 compiles it: %v", uri, ok, err)
			continue
		}
		if !ok {
			continue
		}
		for _, p := range probes {
			want := false
			for _, pd := range p.drafts {
				want = want || pd == d
			}
			got := compile(`{"$schema": "`+uri+`", `+p.body+`}`) == nil
			if got != want {
				t.Errorf("%q read as %v: jsonschema/v5 accepting {%s} = %v, want %v", uri, d, p.body, got, want)
			}
		}
	}
}
