package contract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// metaSchemas holds each draft's meta-schema, compiled once with format
// assertions on (so "pattern" must be a valid regular expression).
var metaSchemas = struct {
	sync.Mutex
	byDraft map[Draft]*jsonschema.Schema
}{byDraft: map[Draft]*jsonschema.Schema{}}

var draftURLs = map[Draft]string{
	Draft4:    "http://json-schema.org/draft-04/schema",
	Draft6:    "http://json-schema.org/draft-06/schema",
	Draft7:    "http://json-schema.org/draft-07/schema",
	Draft2019: "https://json-schema.org/draft/2019-09/schema",
	Draft2020: Draft2020URL,
}

func metaSchema(d Draft) (*jsonschema.Schema, error) {
	metaSchemas.Lock()
	defer metaSchemas.Unlock()
	if s, ok := metaSchemas.byDraft[d]; ok {
		return s, nil
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat = true
	s, err := c.Compile(draftURLs[d])
	if err != nil {
		return nil, err
	}
	metaSchemas.byDraft[d] = s
	return s, nil
}

// metaValidate checks every source schema the contract uses against its
// draft's meta-schema, then compiles every bundled message with
// jsonschema/v5 exactly as the runtime will (draft 2020-12, format
// assertions on).
func (p *parser) metaValidate(roots []*Node) {
	seen := map[*Node]bool{}
	for _, root := range roots {
		src := root.Origin
		info := p.r.info[src]
		if seen[src] || info == nil {
			continue
		}
		seen[src] = true
		meta, err := metaSchema(info.draft)
		if err != nil {
			p.errs.add(errorAt(src, "meta-schema of %s: %v", info.draft, err))
			continue
		}
		if err := meta.Validate(hideECMAPatterns(src.Interface())); err != nil {
			p.errs.add(schemaViolation(src, info.draft, err))
		}
	}
	if len(*p.errs) > 0 {
		return
	}
	for _, m := range p.c.Messages {
		if err := compileBundle(m.Name, m.Bundle); err != nil {
			p.errs.add(errorAt(m.Schema, "message %s does not compile with jsonschema/v5: %v", m.Name, err))
		}
	}
}

// hideECMAPatterns returns a copy of a decoded schema in which every
// pattern only the ECMA-262 engine compiles (a "pattern" string, a key of
// "patternProperties") is replaced by one RE2 compiles, for the
// meta-schema's regex format check, which is Go's regexp: such a pattern is
// valid JSON Schema, and generated code runs it (see ECMAPatternKey).
func hideECMAPatterns(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, mv := range v {
			switch {
			case k == "pattern":
				if s, ok := mv.(string); ok && ecmaOnly(s) {
					mv = ""
				}
			case k == "patternProperties":
				if m, ok := mv.(map[string]any); ok {
					pats := make(map[string]any, len(m))
					for i, pk := range sortedKeys(m) {
						name := pk
						if ecmaOnly(pk) {
							name = "^ecma-" + strconv.Itoa(i) + "$"
						}
						pats[name] = hideECMAPatterns(m[pk])
					}
					out[k] = pats
					continue
				}
			}
			out[k] = hideECMAPatterns(mv)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, it := range v {
			out[i] = hideECMAPatterns(it)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compileBundle compiles a bundled message schema the way the runtime does.
func compileBundle(name string, bundle []byte) (err error) {
	defer func() {
		// jsonschema/v5 panics on some regular expressions its format check
		// let through; report them as errors.
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("bundled schemas refer to nothing outside themselves, but %s does", u)
	}
	url := "lockstep:///" + name + ".json"
	if err := c.AddResource(url, bytes.NewReader(bundle)); err != nil {
		return err
	}
	_, err = c.Compile(url)
	return err
}

// schemaViolation turns a meta-schema failure into errors at the offending
// members of the source schema.
func schemaViolation(src *Node, d Draft, err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return errorAt(src, "not a valid %s schema: %v", d, err)
	}
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	var errs errorList
	seen := map[string]bool{}
	for _, l := range leaves {
		at := src
		if n, err := src.Lookup(l.InstanceLocation); err == nil {
			at = n
		}
		msg := fmt.Sprintf("not a valid %s schema: %s", d, strings.TrimPrefix(l.Message, "jsonschema: "))
		key := at.Pointer + msg
		if seen[key] {
			continue
		}
		seen[key] = true
		errs.add(errorAt(at, "%s", msg))
	}
	return errs.err()
}
