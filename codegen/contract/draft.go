package contract

import "strings"

// Draft is a JSON Schema draft, numbered as jsonschema/v5 numbers them.
type Draft int

// The drafts a schema may declare with "$schema".
const (
	Draft4    Draft = 4
	Draft6    Draft = 6
	Draft7    Draft = 7
	Draft2019 Draft = 2019
	Draft2020 Draft = 2020

	// DraftLatest is what jsonschema/v5 takes for a schema without
	// "$schema" and for "https://json-schema.org/schema".
	DraftLatest = Draft2020
)

// Draft2020URL is the "$schema" of every bundled message schema.
const Draft2020URL = "https://json-schema.org/draft/2020-12/schema"

// String returns the draft's usual name.
func (d Draft) String() string {
	switch d {
	case Draft4:
		return "draft-04"
	case Draft6:
		return "draft-06"
	case Draft7:
		return "draft-07"
	case Draft2019:
		return "2019-09"
	case Draft2020:
		return "2020-12"
	}
	return "unknown draft"
}

// draftOf maps a "$schema" URI to its draft exactly as jsonschema/v5's
// findDraft does, so that the generator accepts what the validator it ships
// accepts: "http://" counts as "https://", a fragment that is empty or "/"
// is dropped, and "https://json-schema.org/schema" (the form Kubernetes
// schemas for kubeconform use) means the latest draft, 2020-12.
func draftOf(uri string) (Draft, bool) {
	u := uri
	if strings.HasPrefix(u, "http://") {
		u = "https://" + strings.TrimPrefix(u, "http://")
	}
	if strings.HasSuffix(u, "#") || strings.HasSuffix(u, "#/") {
		u = u[:strings.IndexByte(u, '#')]
	}
	switch u {
	case "https://json-schema.org/schema":
		return DraftLatest, true
	case "https://json-schema.org/draft-04/schema":
		return Draft4, true
	case "https://json-schema.org/draft-06/schema":
		return Draft6, true
	case "https://json-schema.org/draft-07/schema":
		return Draft7, true
	case "https://json-schema.org/draft/2019-09/schema":
		return Draft2019, true
	case "https://json-schema.org/draft/2020-12/schema":
		return Draft2020, true
	}
	return 0, false
}

// keywordShape says how a keyword holds subschemas.
type keywordShape uint8

const (
	shapeValue     keywordShape = iota // no subschemas (enum, const, type, …)
	shapeSchema                        // one subschema
	shapeSchemas                       // an array of subschemas
	shapeSchemaMap                     // an object of subschemas
	shapeItems                         // items: a schema, or (before 2020-12) an array of schemas
	shapeDeps                          // dependencies: per member an array of names or a schema
)

// keyword is one JSON Schema keyword and the drafts that know it.
type keyword struct {
	shape keywordShape
	since Draft // first draft that has it
	until Draft // last draft that has it (0: still current)
}

func (k keyword) in(d Draft) bool {
	return d >= k.since && (k.until == 0 || d <= k.until)
}

// keywords are the JSON Schema keywords of drafts 4 to 2020-12, with the
// drafts that know them. A 2020-12 keyword in a file of an older draft that
// did not know it is only an annotation there, so normalisation drops it.
// "dependencies" is honoured in every draft because jsonschema/v5 does.
var keywords = map[string]keyword{
	"$schema": {shapeValue, Draft4, 0}, "$id": {shapeValue, Draft6, 0}, "id": {shapeValue, Draft4, Draft4},
	"$ref": {shapeValue, Draft4, 0}, "$anchor": {shapeValue, Draft2019, 0}, "$dynamicRef": {shapeValue, Draft2020, 0},
	"$dynamicAnchor": {shapeValue, Draft2020, 0}, "$recursiveRef": {shapeValue, Draft2019, Draft2019},
	"$recursiveAnchor": {shapeValue, Draft2019, Draft2019}, "$vocabulary": {shapeValue, Draft2019, 0},
	"$comment": {shapeValue, Draft7, 0},
	"$defs":    {shapeSchemaMap, Draft2019, 0}, "definitions": {shapeSchemaMap, Draft4, 0},
	"allOf": {shapeSchemas, Draft4, 0}, "anyOf": {shapeSchemas, Draft4, 0}, "oneOf": {shapeSchemas, Draft4, 0},
	"not": {shapeSchema, Draft4, 0}, "if": {shapeSchema, Draft7, 0}, "then": {shapeSchema, Draft7, 0}, "else": {shapeSchema, Draft7, 0},
	"properties": {shapeSchemaMap, Draft4, 0}, "patternProperties": {shapeSchemaMap, Draft4, 0},
	"additionalProperties": {shapeSchema, Draft4, 0}, "propertyNames": {shapeSchema, Draft6, 0},
	"dependencies": {shapeDeps, Draft4, 0}, "dependentSchemas": {shapeSchemaMap, Draft2019, 0},
	"dependentRequired": {shapeValue, Draft2019, 0},
	"items":             {shapeItems, Draft4, 0}, "additionalItems": {shapeSchema, Draft4, Draft2019},
	"prefixItems": {shapeSchemas, Draft2020, 0}, "contains": {shapeSchema, Draft6, 0},
	"unevaluatedItems": {shapeSchema, Draft2019, 0}, "unevaluatedProperties": {shapeSchema, Draft2019, 0},
	"contentSchema": {shapeSchema, Draft2019, 0},
	"type":          {shapeValue, Draft4, 0}, "enum": {shapeValue, Draft4, 0}, "const": {shapeValue, Draft6, 0},
	"multipleOf": {shapeValue, Draft4, 0}, "maximum": {shapeValue, Draft4, 0}, "exclusiveMaximum": {shapeValue, Draft4, 0},
	"minimum": {shapeValue, Draft4, 0}, "exclusiveMinimum": {shapeValue, Draft4, 0},
	"maxLength": {shapeValue, Draft4, 0}, "minLength": {shapeValue, Draft4, 0}, "pattern": {shapeValue, Draft4, 0},
	"maxItems": {shapeValue, Draft4, 0}, "minItems": {shapeValue, Draft4, 0}, "uniqueItems": {shapeValue, Draft4, 0},
	"maxContains": {shapeValue, Draft2019, 0}, "minContains": {shapeValue, Draft2019, 0},
	"maxProperties": {shapeValue, Draft4, 0}, "minProperties": {shapeValue, Draft4, 0},
	"required": {shapeValue, Draft4, 0}, "format": {shapeValue, Draft4, 0},
	"contentEncoding": {shapeValue, Draft7, 0}, "contentMediaType": {shapeValue, Draft7, 0},
	"title": {shapeValue, Draft4, 0}, "description": {shapeValue, Draft4, 0}, "default": {shapeValue, Draft4, 0},
	"deprecated": {shapeValue, Draft2019, 0}, "readOnly": {shapeValue, Draft7, 0}, "writeOnly": {shapeValue, Draft7, 0},
	"examples": {shapeValue, Draft6, 0},
}

// subschemaKeyword returns the shape of key in draft d, or shapeValue for a
// keyword that holds no subschemas there (including unknown keywords).
func subschemaKeyword(key string, d Draft) keywordShape {
	k, ok := keywords[key]
	if !ok {
		return shapeValue
	}
	if key == "definitions" || key == "$defs" {
		// Both are plain containers that pointers reach in any draft.
		return shapeSchemaMap
	}
	if !k.in(d) {
		return shapeValue
	}
	return k.shape
}
