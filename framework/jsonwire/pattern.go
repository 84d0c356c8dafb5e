package jsonwire

import (
	"hash/maphash"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// Pattern is a schema's regular expression, compiled once by generated
// code, with a small memory of recent answers: the values a component sends
// repeat (quantities, names, label keys), and Go's regexp costs a few
// hundred nanoseconds a match where a remembered answer costs a hash. The
// memory is bounded (a fixed table of short strings) and safe for
// concurrent use. A pattern Go's regexp package (RE2) can run is compiled
// with it, as jsonschema/v5 compiles them, so both agree on every string;
// one that needs ECMA-262's backtracking features (lookahead, lookbehind,
// backreferences) is compiled by [NewECMAPattern] instead.
type Pattern struct {
	re *regexp.Regexp
	// ecma is the backtracking engine's program, when re is nil.
	ecma *regexp2.Regexp
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

// ECMAMatchTimeout and ECMAMaxInput bound the work of a pattern compiled
// by [NewECMAPattern] on one string. A backtracking engine can take time
// exponential in the input on a pattern such as ^(a+)+$, and the input is
// a peer's: a match that runs out of time, or a string of more than
// ECMAMaxInput characters, does not match, so the message is refused
// rather than a core spent on it. No pattern of a real contract comes near
// either bound on a string it is meant for.
const (
	ECMAMatchTimeout = 50 * time.Millisecond
	ECMAMaxInput     = 4096
)

// NewECMAPattern compiles a pattern with an ECMA-262 (JavaScript) regular
// expression engine, for the patterns JSON Schema allows that RE2 cannot
// run: lookahead, lookbehind and backreferences. The generator chooses it
// only for such patterns; its matches are bounded by [ECMAMatchTimeout]
// and [ECMAMaxInput]. One that does not compile is a generator mistake, so
// it panics.
func NewECMAPattern(expr string) *Pattern {
	re := regexp2.MustCompile(expr, regexp2.ECMAScript)
	re.MatchTimeout = ECMAMatchTimeout
	return &Pattern{ecma: re, seed: maphash.MakeSeed()}
}

// CompilesAsECMA reports whether expr compiles with the engine of
// [NewECMAPattern].
func CompilesAsECMA(expr string) bool {
	_, err := regexp2.Compile(expr, regexp2.ECMAScript)
	return err == nil
}

// String returns the pattern's source.
func (p *Pattern) String() string {
	if p.ecma != nil {
		return p.ecma.String()
	}
	return p.re.String()
}

// ECMA reports whether the pattern runs on the backtracking ECMA-262
// engine rather than RE2.
func (p *Pattern) ECMA() bool { return p.ecma != nil }

// match runs the pattern's engine on s.
func (p *Pattern) match(s string) bool {
	if p.ecma == nil {
		return p.re.MatchString(s)
	}
	if len(s) > ECMAMaxInput && utf8.RuneCountInString(s) > ECMAMaxInput {
		return false
	}
	ok, err := p.ecma.MatchString(s)
	return ok && err == nil
}

// MatchString reports whether s contains a match of the pattern.
func (p *Pattern) MatchString(s string) bool {
	if len(s) > patternMaxRemembered {
		return p.match(s)
	}
	slot := &p.seen[maphash.String(p.seed, s)%patternSlots]
	if a := slot.Load(); a != nil && a.s == s {
		return a.ok
	}
	ok := p.match(s)
	// A copy, so that the table never keeps a decoded message's text alive.
	slot.Store(&patternAnswer{s: strings.Clone(s), ok: ok})
	return ok
}

// CompilePattern compiles a JSON Schema pattern with the engine generated
// code runs it on: Go's regexp (RE2) when it can run it, else the
// ECMA-262 engine of [NewECMAPattern]; it fails when neither compiles it,
// with RE2's error. The generator calls it to choose between NewPattern
// and NewECMAPattern.
func CompilePattern(expr string) (*Pattern, error) {
	re, err := regexp.Compile(expr)
	if err == nil {
		return &Pattern{re: re, seed: maphash.MakeSeed()}, nil
	}
	ecma, ecmaErr := regexp2.Compile(expr, regexp2.ECMAScript)
	if ecmaErr != nil {
		return nil, err
	}
	ecma.MatchTimeout = ECMAMatchTimeout
	return &Pattern{ecma: ecma, seed: maphash.MakeSeed()}, nil
}
