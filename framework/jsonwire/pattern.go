package jsonwire

import (
	"hash/maphash"
	"regexp"
	"strings"
	"sync/atomic"
)

// Pattern is a schema's regular expression, compiled once by generated
// code, with a small memory of recent answers: the values a component sends
// repeat (quantities, names, label keys), and Go's regexp costs a few
// hundred nanoseconds a match where a remembered answer costs a hash. The
// memory is bounded (a fixed table of short strings) and safe for
// concurrent use; patterns are compiled with Go's regexp package, as
// jsonschema/v5 compiles them, so both agree on every string.
type Pattern struct {
	re   *regexp.Regexp
	seed maphash.Seed
	seen [patternSlots]atomic.Pointer[patternAnswer]
}

const (
	patternSlots = 256
	// patternMaxRemembered bounds the strings remembered, so that the table
	// stays small whatever it is fed.
	patternMaxRemembered = 64
)

type patternAnswer struct {
	s  string
	ok bool
}

// NewPattern compiles a pattern; one that does not compile is a generator
// mistake, so it panics.
func NewPattern(expr string) *Pattern {
	return &Pattern{re: regexp.MustCompile(expr), seed: maphash.MakeSeed()}
}

// String returns the pattern's source.
func (p *Pattern) String() string { return p.re.String() }

// MatchString reports whether s contains a match of the pattern.
func (p *Pattern) MatchString(s string) bool {
	if len(s) > patternMaxRemembered {
		return p.re.MatchString(s)
	}
	slot := &p.seen[maphash.String(p.seed, s)%patternSlots]
	if a := slot.Load(); a != nil && a.s == s {
		return a.ok
	}
	ok := p.re.MatchString(s)
	// A copy, so that the table never keeps a decoded message's text alive.
	slot.Store(&patternAnswer{s: strings.Clone(s), ok: ok})
	return ok
}
