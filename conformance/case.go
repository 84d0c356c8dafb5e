package conformance

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A Case is one conformance case, read from a YAML file of cases/: a name,
// what it shows, and the steps to play. The steps are data; see
// cases/README.md for their form.
type Case struct {
	// Name is the case's file path under cases/ without ".yaml".
	Name string `yaml:"-"`
	// About says, in a sentence, what a passing implementation does.
	About string `yaml:"about"`
	// Steps are played in order; the first that fails fails the case.
	Steps []map[string]any `yaml:"steps"`
	// Script is a client-side case's scripted server (see ClientCase).
	Script []map[string]any `yaml:"script"`
	// Scenario is what a client-side case asks the client under test to do.
	Scenario string `yaml:"scenario"`
	// Expect is what the client under test must report for its scenario.
	Expect map[string]any `yaml:"expect"`
}

// LoadCases reads every case under dir of fsys ("server" or "client"),
// sorted by name.
func LoadCases(fsys fs.FS, dir string) ([]*Case, error) {
	var cases []*Case
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".yaml" {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		c := &Case{}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(c); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		c.Name = strings.TrimSuffix(p, ".yaml")
		for i, s := range c.Steps {
			c.Steps[i] = normalise(s).(map[string]any)
		}
		for i, s := range c.Script {
			c.Script[i] = normalise(s).(map[string]any)
		}
		if c.Expect != nil {
			c.Expect = normalise(c.Expect).(map[string]any)
		}
		cases = append(cases, c)
		return nil
	})
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	return cases, err
}

// normalise turns YAML's decoded values into JSON's (float64 numbers,
// map[string]any objects), so that expectations compare with decoded
// answers.
func normalise(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalise(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalise(e)
		}
		return out
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	}
	return v
}

// Vars are a case's variables: the predefined ones (fingerprint, version,
// contract, client, server, instance, instance2) and the ones captured
// from answers.
type Vars map[string]any

// clone returns a copy of vs, for a match that may fail after capturing.
func (vs Vars) clone() Vars {
	c := make(Vars, len(vs))
	for k, v := range vs {
		c[k] = v
	}
	return c
}

// expand replaces "$name" strings by their variable's value, and "${name}"
// inside longer strings by its text.
func (vs Vars) expand(v any) (any, error) {
	switch v := v.(type) {
	case string:
		if strings.HasPrefix(v, "$") && isIdent(v[1:]) {
			val, ok := vs[v[1:]]
			if !ok {
				return nil, fmt.Errorf("variable %s is not set", v)
			}
			return val, nil
		}
		var err error
		out := v
		for {
			i := strings.Index(out, "${")
			if i < 0 {
				break
			}
			j := strings.Index(out[i:], "}")
			if j < 0 {
				break
			}
			name := out[i+2 : i+j]
			val, ok := vs[name]
			if !ok {
				err = fmt.Errorf("variable %s is not set", name)
				break
			}
			out = out[:i] + fmt.Sprint(val) + out[i+j+1:]
		}
		return out, err
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			x, err := vs.expand(e)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := vs.expand(e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	return v, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// match reports whether actual matches the expectation want, capturing
// "$name=" placeholders into vs. Objects match when every expected member
// matches (other members are allowed); "$absent" requires a member to be
// missing. Arrays match element by element and must have the same length.
// "$any" matches any value that is present, "$string" any string,
// "$nonempty" any non-empty string, "$name" the variable's value.
func (vs Vars) match(want, actual any, at string) error {
	switch w := want.(type) {
	case string:
		switch {
		case w == "$any":
			return nil
		case w == "$string" || w == "$nonempty":
			s, ok := actual.(string)
			if !ok || (w == "$nonempty" && s == "") {
				return fmt.Errorf("%s: want %s, got %s", at, w[1:], show(actual))
			}
			return nil
		case strings.HasSuffix(w, "=") && strings.HasPrefix(w, "$") && isIdent(w[1:len(w)-1]):
			if actual == nil {
				return fmt.Errorf("%s: want a value to capture as %s, got nothing", at, w[1:len(w)-1])
			}
			vs[w[1:len(w)-1]] = actual
			return nil
		}
		x, err := vs.expand(w)
		if err != nil {
			return err
		}
		if s, ok := x.(string); ok && s == w {
			if actual != w {
				return fmt.Errorf("%s: want %s, got %s", at, show(w), show(actual))
			}
			return nil
		}
		return vs.match(x, actual, at)
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %s", at, show(actual))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			av, present := a[k]
			if w[k] == "$absent" {
				if present {
					return fmt.Errorf("%s.%s: want no member, got %s", at, k, show(av))
				}
				continue
			}
			if !present {
				return fmt.Errorf("%s.%s: missing (want %s)", at, k, show(w[k]))
			}
			if err := vs.match(w[k], av, at+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		a, ok := actual.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %s", at, show(actual))
		}
		if len(a) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %d: %s", at, len(w), len(a), show(actual))
		}
		for i := range w {
			if err := vs.match(w[i], a[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(want, actual) {
		return fmt.Errorf("%s: want %s, got %s", at, show(want), show(actual))
	}
	return nil
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
