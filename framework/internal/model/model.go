package model

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Check checks what the runtime relies on: names, roles, and that every
// message a method or topic names has a schema.
func Check(m *handshake.Contract) error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, errors.New("contract name is required"))
	}
	if m.Server == "" || m.Client == "" {
		errs = append(errs, errors.New("server and client components are required"))
	}
	if m.Server != "" && m.Server == m.Client {
		errs = append(errs, fmt.Errorf("server and client are both %q", m.Server))
	}
	for _, name := range slices.Sorted(maps.Keys(m.Methods)) {
		meth := m.Methods[name]
		if !validMethodName(name) {
			errs = append(errs, fmt.Errorf("method %q: names are letters and digits, starting with a letter", name))
		}
		for _, msg := range []string{meth.Request, meth.Response} {
			if _, ok := m.Schemas[msg]; !ok {
				errs = append(errs, fmt.Errorf("method %s: message %q has no schema", name, msg))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Topics)) {
		t := m.Topics[name]
		if _, ok := m.Schemas[t.Object]; !ok {
			errs = append(errs, fmt.Errorf("topic %s: object %q has no schema", name, t.Object))
		}
		if t.Writer != handshake.RoleServer && t.Writer != handshake.RoleClient {
			errs = append(errs, fmt.Errorf("topic %s: writer must be server or client, not %q", name, t.Writer))
		}
		if t.LostWriter != handshake.LostWriterDelete && t.LostWriter != handshake.LostWriterKeep {
			errs = append(errs, fmt.Errorf("topic %s: lostWriter must be delete or keep, not %q", name, t.LostWriter))
		}
		if t.Key == "" {
			errs = append(errs, fmt.Errorf("topic %s: key is required", name))
		}
		if err := CheckSelectors(t.Selectors); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func validMethodName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		digit := r >= '0' && r <= '9'
		if !letter && !(digit && i > 0) {
			return false
		}
	}
	return true
}

// CheckSelectors checks a topic's declared selectors: distinct, non-empty
// names, none of them a watch request's own parameter. That each is a
// scalar member of the object is the generator's check (it reads the
// schema); a contract described by hand is trusted with it.
func CheckSelectors(sel []string) error {
	var errs []error
	for i, f := range sel {
		switch {
		case f == "":
			errs = append(errs, errors.New("a selector must name a field"))
		case f == protocol.QuerySince:
			errs = append(errs, fmt.Errorf("selector %q is the watch request's resume parameter", f))
		case slices.Contains(sel[:i], f):
			errs = append(errs, fmt.Errorf("selector %q is listed twice", f))
		}
	}
	return errors.Join(errs...)
}

// Clone returns a copy of m that shares nothing the runtime may keep: its
// maps, and each topic's selectors.
func Clone(m handshake.Contract) handshake.Contract {
	m.Methods = cloneMap(m.Methods)
	m.Topics = CloneTopics(m.Topics)
	m.Schemas = cloneMap(m.Schemas)
	return m
}

// CloneTopics copies topic declarations with their selectors, so that no
// caller shares the runtime's.
func CloneTopics(m map[string]handshake.Topic) map[string]handshake.Topic {
	out := cloneMap(m)
	for name, t := range out {
		t.Selectors = slices.Clone(t.Selectors)
		out[name] = t
	}
	return out
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
