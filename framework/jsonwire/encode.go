package jsonwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Generated encoders (an AppendJSON method on every generated type) append
// a value's JSON to a byte slice with the helpers below instead of going
// through encoding/json's reflection. Their output is byte for byte what
// json.Marshal writes for the same value: the same member order, the same
// omitzero rule, map members sorted by name, strings escaped as
// encoding/json escapes them (HTML characters and U+2028/U+2029 included),
// numbers formatted as it formats them.

// Appender is implemented by generated types: AppendJSON appends the
// value's JSON encoding to b, exactly as json.Marshal would write it. The
// runtime (package framework) encodes values that implement it into pooled
// buffers.
type Appender interface {
	AppendJSON(b []byte) ([]byte, error)
}

const hexDigits = "0123456789abcdef"

// htmlSafe holds, for each ASCII byte, whether encoding/json writes it in
// a string as itself (with HTML escaping on, as json.Marshal has it).
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it: \" \\ \b \f \n \r \t, other control characters and < > &
// as \u00XX, U+2028 and U+2029 as \u2028 and \u2029, and each byte of
// invalid UTF-8 as \ufffd.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendBool appends true or false.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// AppendInt appends a signed integer.
func AppendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// AppendUint appends an unsigned integer.
func AppendUint(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

// errUnsupportedFloat is returned for NaN and infinities, which JSON
// cannot hold (json.Marshal fails on them too).
var errUnsupportedFloat = errors.New("json: unsupported value: NaN or infinity")

// AppendFloat64 appends a float64 as encoding/json formats it: like
// ECMAScript, in exponent form below 1e-6 and from 1e21, with the
// exponent unpadded.
func AppendFloat64(b []byte, f float64) ([]byte, error) { return appendFloat(b, f, 64) }

// AppendFloat32 appends a float32 as encoding/json formats it.
func AppendFloat32(b []byte, f float32) ([]byte, error) { return appendFloat(b, float64(f), 32) }

func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("%w: %s", errUnsupportedFloat, strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07, as strconv writes it, is 1e-7 in encoding/json.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// AppendTime appends t as time.Time's MarshalJSON writes it (RFC 3339
// with nanoseconds, quoted); it fails where that does, for years outside
// 0–9999.
func AppendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, fmt.Errorf("Time.MarshalJSON: %w", err)
	}
	return append(b, '"'), nil
}

// AppendRaw appends raw JSON as encoding/json writes a json.RawMessage:
// null when nil, otherwise compacted with HTML characters escaped, and an
// error when it is not valid JSON. Raw JSON that needs none of that (the
// common case: compact, no < > & or U+2028/U+2029) is copied as it is.
func AppendRaw(b []byte, raw []byte) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	if plainRaw(raw) && json.Valid(raw) {
		return append(b, raw...), nil
	}
	return appendMarshal(b, json.RawMessage(raw))
}

// plainRaw reports whether raw holds no byte that encoding/json's
// compaction would drop or escape.
func plainRaw(raw []byte) bool {
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case c == '<' || c == '>' || c == '&' || c == 0xE2:
			return false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

// appendMarshal appends json.Marshal(v).
func appendMarshal(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, out...), nil
}

// SortedKeys appends a map's keys to keys in the order encoding/json
// writes them, sorted by their bytes. Generated encoders pass a small
// array on their stack, so that a map of a few members costs no
// allocation. The keys are strings, or an enum type of strings (a map
// whose schema's propertyNames is an enum), sorted as their strings.
func SortedKeys[K ~string, V any](m map[K]V, keys []K) []K {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ExtraKeys returns the names of a struct's undeclared members in the
// order [MarshalWithExtras] writes them, or its error when one is also a
// declared member.
func ExtraKeys[V any](extras map[string]V, declared ...string) ([]string, error) {
	for k := range extras {
		if slices.Contains(declared, k) {
			return nil, fmt.Errorf("undeclared member %q is also a declared member", k)
		}
	}
	return SortedKeys(extras, nil), nil
}

// TupleHole is the error when a tuple element is set after one that is
// not: JSON arrays have no holes.
func TupleHole(set, missing int) error {
	return fmt.Errorf("tuple element %d is set but element %d before it is not", set, missing)
}

// VariantCount is the error of a tagged union that does not have exactly
// one variant set.
func VariantCount(union string, n int) error {
	return fmt.Errorf("%s: exactly one variant must be set, not %d: %w", union, n, ErrNoVariant)
}

// NoRaw is the error of an untagged union that holds no JSON.
func NoRaw(union string) error { return fmt.Errorf("%s: %w", union, ErrNoVariant) }

// CloseObject ends an object whose members were appended after start,
// each with a leading comma: the first comma becomes the opening brace.
// Generated encoders write objects this way so that no member has to know
// whether one before it was left out.
func CloseObject(b []byte, start int) []byte {
	if len(b) == start {
		return append(b, '{', '}')
	}
	b[start] = '{'
	return append(b, '}')
}
