package gomodel

import (
	"math/big"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// KeywordRole is what generated checks do with a keyword of a schema: the
// model's rule, which the validator emitter follows and whose unchecked
// keywords become a type's [Validation] reasons.
type KeywordRole int

// The roles of a keyword.
const (
	// KeywordIgnored asserts nothing: annotations, content keywords (which
	// the runtime does not assert either), x- extensions, and keywords
	// jsonschema/v5 does not know, which it ignores too.
	KeywordIgnored KeywordRole = iota
	// KeywordChecked is evaluated by generated checks.
	KeywordChecked
	// KeywordUnchecked is a validation keyword generated checks do not
	// evaluate: a schema using it leaves its message to jsonschema/v5.
	KeywordUnchecked
)

// RoleOf returns the role of keyword k.
func RoleOf(k string) KeywordRole {
	switch {
	case annotationKeywords[k] || strings.HasPrefix(k, "x-"):
		return KeywordIgnored
	case uncheckedKeywords[k]:
		return KeywordUnchecked
	case checkedKeywords[k]:
		return KeywordChecked
	}
	return KeywordIgnored
}

// UncheckedReason says why a schema using keyword k gets no generated
// checks, for a [KeywordUnchecked] keyword.
func UncheckedReason(k string) string {
	return k + " is not checked by generated code"
}

var annotationKeywords = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "$comment": true, "$defs": true, "definitions": true,
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$vocabulary": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
}

var checkedKeywords = map[string]bool{
	"$ref": true, "type": true, "enum": true, "const": true, "format": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "required": true,
	"propertyNames": true, "minProperties": true, "maxProperties": true, "dependentRequired": true, "dependentSchemas": true,
	"prefixItems": true, "items": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"contains": true, "minContains": true, "maxContains": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
}

// uncheckedKeywords are validation keywords of 2020-12 (and of earlier
// drafts, where normalising left them) that generated checks do not
// evaluate.
var uncheckedKeywords = map[string]bool{
	"unevaluatedProperties": true, "unevaluatedItems": true, "$dynamicRef": true, "$recursiveRef": true,
	"dependencies": true, "additionalItems": true,
}

// Count returns the value of a keyword that counts (minLength, maxItems,
// minContains, …) when it is a non-negative integer Go can hold.
func Count(n *contract.Node) (int64, bool) {
	if n.Kind != contract.KindNumber {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(n.Text)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// KnownFormat reports whether jsonschema/v5 asserts the format: the others
// assert nothing, there as in generated checks.
func KnownFormat(name string) bool {
	_, ok := jsonschema.Formats[name]
	return ok
}

// IsTrue reports whether a schema accepts everything: true, or an object
// of keywords that assert nothing.
func IsTrue(s *contract.Node) bool {
	if s.Kind == contract.KindBool {
		return s.Bool
	}
	if s.Kind != contract.KindObject {
		return false
	}
	for _, k := range s.Keys {
		if RoleOf(k) != KeywordIgnored {
			return false
		}
	}
	return true
}

// IsFalse reports whether a schema is false.
func IsFalse(s *contract.Node) bool { return s.Kind == contract.KindBool && !s.Bool }

// OnlyRef reports whether s is a "$ref" with nothing but annotations
// beside it.
func OnlyRef(s *contract.Node) bool {
	if s.Kind != contract.KindObject || s.Ref == nil {
		return false
	}
	for _, k := range s.Keys {
		if k != "$ref" && RoleOf(k) != KeywordIgnored {
			return false
		}
	}
	return true
}

// BranchTag returns the one string a branch of alternatives requires
// member prop to hold, if it says so plainly: prop required, and its
// schema a const or a one-value enum.
func BranchTag(br *contract.Node, prop string) (string, bool) {
	required, tag, found := false, "", false
	for _, part := range InPlace(br) {
		if req := part.Get("required"); req != nil {
			for _, it := range req.Items {
				required = required || it.Text == prop
			}
		}
		ps := part.Get("properties").Get(prop)
		for _, sub := range InPlace(ps) {
			vals := sub.Get("enum")
			var v *contract.Node
			switch {
			case sub.Get("const") != nil:
				v = sub.Get("const")
			case vals != nil && len(vals.Items) == 1:
				v = vals.Items[0]
			}
			if v != nil && v.Kind == contract.KindString {
				tag, found = v.Text, true
			}
		}
	}
	return tag, required && found
}
