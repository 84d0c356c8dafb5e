// Package selvalue holds the one rule by which a topic's selection names
// the value of an object's member: the server's index of selected watches
// and the upgrade kit's comparison of a selected watcher with its holder
// both read values through it.
package selvalue

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
)

// Of returns the text by which a selection names a JSON value, and
// whether it has one: a string's value, true or false, an integer in
// shortest decimal form (so 42, 42.0 and 4.2e1 are all 42); a number with
// a fraction keeps its literal. null, an object and an array have none.
func Of(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch c := v[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case c == 't' || c == 'f':
		return string(v), true
	case c == '-' || (c >= '0' && c <= '9'):
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return string(v), true
		}
		if r, ok := new(big.Rat).SetString(string(v)); ok && r.IsInt() {
			return r.Num().String(), true
		}
		return string(v), true
	}
	return "", false
}

// Matches reports whether an encoded object is in a selection (field →
// value, as a watch names them): every field is a member whose value
// ([Of]) is the one named. An object that does not decode matches none.
func Matches(object []byte, selection map[string]string) bool {
	if len(selection) == 0 {
		return true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(object, &fields) != nil {
		return false
	}
	for f, want := range selection {
		got, ok := Of(fields[f])
		if !ok || got != want {
			return false
		}
	}
	return true
}
