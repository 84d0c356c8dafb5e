package jsonwire

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// Path is a JSON pointer that generated validators build on the stack as
// they descend into a value: one Path per level, linked to its parent, and
// turned into text only when a violation is recorded. A nil *Path is the
// root. The same type spells keyword locations, whose steps are written
// already escaped ("properties/conditions/items/$ref").
type Path struct {
	parent *Path
	token  string
	index  int
	kind   pathKind
}

type pathKind uint8

const (
	pathMember pathKind = iota
	pathIndex
	pathKeyword
)

// Member returns the path of member name below p.
func (p *Path) Member(name string) Path { return Path{parent: p, token: name} }

// Index returns the path of element i below p.
func (p *Path) Index(i int) Path { return Path{parent: p, index: i, kind: pathIndex} }

// Keyword returns the path of a keyword location below p; steps is one or
// more reference tokens, already escaped, separated by '/'.
func (p *Path) Keyword(steps string) Path { return Path{parent: p, token: steps, kind: pathKeyword} }

// String returns the JSON pointer, "" for the root. It copies what it
// reads, so that paths built on the stack stay there.
func (p *Path) String() string {
	var b strings.Builder
	p.write(&b)
	return b.String()
}

func (p *Path) write(b *strings.Builder) {
	if p == nil {
		return
	}
	p.parent.write(b)
	switch p.kind {
	case pathIndex:
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(p.index))
	case pathKeyword:
		if p.token != "" {
			b.WriteByte('/')
			b.WriteString(p.token)
		}
	default:
		b.WriteByte('/')
		writeEscaped(b, p.token)
	}
}

// writeEscaped writes a reference token with '~' and '/' escaped.
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(s[i])
		}
	}
}

func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Violation is one keyword a value violates, in the form the runtime gives
// jsonschema/v5's failures in error details: the JSON pointer of the
// value, the keyword's location in the schema, and a message.
type Violation struct {
	Instance string `json:"instance"`
	Keyword  string `json:"keyword"`
	Message  string `json:"message"`
}

// Validation collects the violations generated validators find. A quiet
// one ([Validation.Quiet]) only counts them: oneOf, anyOf, not, contains
// and if try subschemas with it.
type Validation struct {
	quiet      bool
	failed     int
	violations []Violation
	// unrepresentable marks a value that a union's alternatives refused
	// because their Go types cannot hold a number in it (see
	// [ErrUnrepresentable]).
	unrepresentable bool
	// parent is the validation a quiet one tries a subschema for.
	parent *Validation
}

// Unrepresentable notes, after a union's alternatives all failed to
// decode, whether one failed only for a number its Go type cannot hold:
// the error of [Validation.Err] then matches [ErrUnrepresentable].
func (v *Validation) Unrepresentable(errs ...error) {
	for _, err := range errs {
		if errors.Is(err, ErrUnrepresentable) {
			for w := v; w != nil; w = w.parent {
				w.unrepresentable = true
			}
		}
	}
}

// Quiet returns a validation that only counts violations, for trying a
// subschema.
func (v *Validation) Quiet() Validation { return Validation{quiet: true, parent: v} }

// OK reports whether no violation was recorded.
func (v *Validation) OK() bool { return v.failed == 0 }

// Violations returns the violations recorded.
func (v *Validation) Violations() []Violation { return v.violations }

// Fail records a violation: the value at at (followed by the escaped
// steps atSteps) violates the keyword at kw (followed by kwSteps).
func (v *Validation) Fail(at *Path, atSteps string, kw *Path, kwSteps, message string) {
	v.failed++
	if v.quiet {
		return
	}
	a, k := at.Keyword(atSteps), kw.Keyword(kwSteps)
	v.violations = append(v.violations, Violation{Instance: a.String(), Keyword: k.String(), Message: message})
}

// Err returns nil when nothing was violated, and otherwise the error the
// runtime returns for a message that does not match its schema:
// invalid_argument, the violations in the message and, as
// {"violations":[…]}, in the details.
func (v *Validation) Err(message string) error {
	if v.failed == 0 {
		return nil
	}
	parts := make([]string, 0, len(v.violations))
	for _, x := range v.violations {
		loc := x.Instance
		if loc == "" {
			loc = "/"
		}
		parts = append(parts, loc+": "+x.Message)
	}
	text := message + " does not match its schema: " + strings.Join(parts, "; ")
	var cause error = errors.New(text)
	if v.unrepresentable {
		cause = &DecodeError{Message: text, unrepresentable: true}
	}
	return apierror.NewError(apierror.CodeInvalidArgument, cause).WithDetails(map[string]any{"violations": v.violations})
}

// Length is a string's length as JSON Schema counts it: in code points.
func Length(s string) int { return utf8.RuneCountInString(s) }

// IsFormat reports whether s is valid for the named format, checked by
// jsonschema/v5's own format functions so that generated validators and
// the runtime's schema validation agree. Formats jsonschema/v5 does not
// know are not asserted.
func IsFormat(format, s string) bool {
	f, ok := jsonschema.Formats[format]
	return !ok || f(s)
}

// Rat parses a JSON number's text for generated code; a text that is not
// a number is a generator mistake, so it panics.
func Rat(text string) *big.Rat {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		panic("lockstep: not a number: " + text)
	}
	return r
}

// MultipleOfFloat reports whether x is a multiple of q, reading x as the
// shortest decimal that rounds to it: the number as it was written, for
// numbers of up to 15 significant digits.
func MultipleOfFloat(x float64, q *big.Rat) bool {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		return false
	}
	return r.Quo(r, q).IsInt()
}

// Quote quotes a string for a violation message as jsonschema/v5 does.
func Quote(s string) string { return strconv.Quote(s) }

// Has reports whether a map holds key; its keys are strings, or an enum
// type of strings (a map whose schema's propertyNames is an enum).
func Has[K ~string, V any](m map[K]V, key K) bool {
	_, ok := m[key]
	return ok
}

// MissingMessage is the violation message of missing required members.
func MissingMessage(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return "missing properties: " + strings.Join(q, ", ")
}

// IsIntegral reports whether f is an integer.
func IsIntegral(f float64) bool { return f == math.Trunc(f) && !math.IsInf(f, 0) }

// Duplicate returns the indexes of the first two equal elements of s, for
// uniqueItems.
func Duplicate[S ~[]E, E comparable](s S) (int, int, bool) {
	if len(s) <= 16 {
		for j := 1; j < len(s); j++ {
			for i := 0; i < j; i++ {
				if s[i] == s[j] {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	seen := make(map[E]int, len(s))
	for j, e := range s {
		if i, ok := seen[e]; ok {
			return i, j, true
		}
		seen[e] = j
	}
	return 0, 0, false
}

// DuplicatePointer is [Duplicate] for elements that may be null (nil).
func DuplicatePointer[S ~[]*E, E comparable](s S) (int, int, bool) {
	for j := 1; j < len(s); j++ {
		for i := 0; i < j; i++ {
			a, b := s[i], s[j]
			if a == nil && b == nil || a != nil && b != nil && *a == *b {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}
