// Package jsonvalue compares decoded JSON documents for the generator's
// round-trip checks (the real-world corpus and the JSON Schema Test Suite),
// so that both checks share one comparison and differ only in how they
// compare strings.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// Decode decodes JSON with numbers as json.Number, so that Same can compare
// them by value.
func Decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// Same reports whether two documents decoded by [Decode] hold the same JSON
// value: members, their presence and nulls exactly, numbers by value (25.0
// is 25), and strings as sameString says.
func Same(a, b any, sameString func(a, b string) bool) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			w, ok := bm[k]
			if !ok || !Same(v, w, sameString) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !Same(a[i], bs[i], sameString) {
				return false
			}
		}
		return true
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okx := new(big.Rat).SetString(a.String())
		y, oky := new(big.Rat).SetString(bn.String())
		return okx && oky && x.Cmp(y) == 0
	case string:
		bs, ok := b.(string)
		return ok && sameString(a, bs)
	}
	return a == b
}

// Equal is the exact string comparison, for Same.
func Equal(a, b string) bool { return a == b }
