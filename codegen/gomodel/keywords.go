package gomodel

import "strings"

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
