package diff

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// typeSet is a set of JSON types as validation sees them. Integers and
// other numbers are kept apart so that integer→number is a widening and
// number→integer a narrowing.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeString
	typeInteger
	typeFraction // a number that is not an integer

	typeNumber = typeInteger | typeFraction
	allTypes   = typeNull | typeBoolean | typeObject | typeArray | typeString | typeNumber
)

// typesOf returns the set a "type" keyword accepts; no keyword accepts all.
func typesOf(names []string) typeSet {
	if len(names) == 0 {
		return allTypes
	}
	var set typeSet
	for _, name := range names {
		switch name {
		case "null":
			set |= typeNull
		case "boolean":
			set |= typeBoolean
		case "object":
			set |= typeObject
		case "array":
			set |= typeArray
		case "string":
			set |= typeString
		case "integer":
			set |= typeInteger
		case "number":
			set |= typeNumber
		}
	}
	return set
}

// typeOfValue returns the type of one decoded JSON value.
func typeOfValue(value any) typeSet {
	switch v := value.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case map[string]any:
		return typeObject
	case []any:
		return typeArray
	case string:
		return typeString
	case json.Number:
		if numberIsInteger(string(v)) {
			return typeInteger
		}
		return typeFraction
	case float64:
		if v == float64(int64(v)) {
			return typeInteger
		}
		return typeFraction
	}
	return 0
}

// String names the set for messages: "integer", "string or null", "any type".
func (t typeSet) String() string {
	if t == allTypes {
		return "any type"
	}
	if t == 0 {
		return "no type"
	}
	var names []string
	for _, named := range []struct {
		set  typeSet
		name string
	}{
		{typeObject, "object"}, {typeArray, "array"}, {typeString, "string"},
		{typeBoolean, "boolean"},
	} {
		if t&named.set != 0 {
			names = append(names, named.name)
		}
	}
	switch t & typeNumber {
	case typeNumber:
		names = append(names, "number")
	case typeInteger:
		names = append(names, "integer")
	case typeFraction:
		names = append(names, "non-integer number")
	}
	if t&typeNull != 0 {
		names = append(names, "null")
	}
	return strings.Join(names, " or ")
}

// valueSet is the finite set of values an enum and/or const allows, keyed
// by canonical JSON so that 1 and 1.0 are the same value.
type valueSet struct {
	keys    []string          // canonical forms, in schema order
	values  map[string]any    // canonical form → decoded value
	display map[string]string // canonical form → compact JSON for messages
	types   typeSet           // the types of the values
}

func (v *valueSet) has(key string) bool {
	_, ok := v.display[key]
	return ok
}

// newValueSet builds the set of values allowed by enum and const together,
// keeping only values of an allowed type. It returns nil when neither
// keyword is present.
func newValueSet(enum, constant []any, allowed typeSet) *valueSet {
	if enum == nil && constant == nil {
		return nil
	}
	set := &valueSet{values: map[string]any{}, display: map[string]string{}}
	add := func(value any) {
		kind := typeOfValue(value)
		if kind&allowed == 0 {
			return
		}
		key := canonicalJSON(value)
		if set.has(key) {
			return
		}
		set.keys = append(set.keys, key)
		set.values[key] = value
		set.display[key] = displayJSON(value)
		set.types |= kind
	}
	switch {
	case constant != nil && enum != nil:
		key := canonicalJSON(constant[0])
		for _, value := range enum {
			if canonicalJSON(value) == key {
				add(constant[0])
				break
			}
		}
	case constant != nil:
		add(constant[0])
	default:
		for _, value := range enum {
			add(value)
		}
	}
	return set
}

// canonicalJSON renders a decoded JSON value so that equal values (by JSON
// Schema's equality: numbers by value, objects regardless of key order)
// render equally.
func canonicalJSON(value any) string {
	var b strings.Builder
	writeCanonical(&b, value)
	return b.String()
}

func writeCanonical(b *strings.Builder, value any) {
	switch v := value.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(strconv.Quote(v))
	case json.Number:
		b.WriteString(canonicalNumber(string(v)))
	case float64:
		b.WriteString(canonicalNumber(strconv.FormatFloat(v, 'g', -1, 64)))
	case []any:
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, item)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for key := range v {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, key := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(key))
			b.WriteByte(':')
			writeCanonical(b, v[key])
		}
		b.WriteByte('}')
	default:
		b.WriteString("?")
	}
}

// maxExponent bounds the decimal exponents parsed exactly; beyond it a
// number is compared by its text, which keeps huge exponents from costing
// huge amounts of memory.
const maxExponent = 400

// parseNumber parses a JSON number exactly, or returns nil when it is not a
// number or its exponent is beyond maxExponent.
func parseNumber(text string) *big.Rat {
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		exponent, err := strconv.Atoi(strings.TrimPrefix(text[i+1:], "+"))
		if err != nil || exponent > maxExponent || exponent < -maxExponent {
			return nil
		}
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil
	}
	return r
}

func canonicalNumber(text string) string {
	if r := parseNumber(text); r != nil {
		return r.RatString()
	}
	return strings.ToLower(text)
}

func numberIsInteger(text string) bool {
	if r := parseNumber(text); r != nil {
		return r.IsInt()
	}
	return !strings.ContainsAny(text, ".eE")
}

// formatRat prints a number the way a person writes it: an integer, an
// exact decimal when there is one, a fraction otherwise.
func formatRat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	for digits := 1; digits <= 30; digits++ {
		text := r.FloatString(digits)
		if back, ok := new(big.Rat).SetString(text); ok && back.Cmp(r) == 0 {
			return text
		}
	}
	return r.RatString()
}

// maxDisplay bounds how much of a value a message quotes.
const maxDisplay = 60

// displayJSON renders a value compactly for a message.
func displayJSON(value any) string {
	text, err := json.Marshal(value)
	if err != nil {
		text = []byte(canonicalJSON(value))
	}
	return truncate(string(text))
}

func truncate(text string) string {
	if len(text) <= maxDisplay {
		return text
	}
	cut := maxDisplay
	for cut > 0 && !isRuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
