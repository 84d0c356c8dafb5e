package diff_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/diff"
)

// schemaPair is one row of the schema comparison table.
type schemaPair struct {
	name string
	// old and new are the two versions of one message schema.
	old, new string
	// dir is the way the message flows.
	dir diff.Direction
	// breaking is the expected verdict: some change is breaking for dir.
	breaking bool
	// kinds lists the kinds of every change reported, sorted.
	kinds []diff.Kind
}

const (
	draft04 = `"$schema":"http://json-schema.org/draft-04/schema#",`
	draft07 = `"$schema":"http://json-schema.org/draft-07/schema#",`
)

var schemaPairs = []schemaPair{
	// Nothing changed: no change in any direction.
	{name: "identical", old: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		new: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, dir: diff.Both},
	// Only annotations changed, which are not on the wire: no change.
	{name: "annotations only", old: `{"title":"A","description":"x","type":"string","examples":["a"],"$comment":"c"}`,
		new: `{"title":"B","description":"y","type":"string","examples":["b"]}`, dir: diff.Both},
	// Keys reordered and 1 written as 1.0 in an enum: same values, no change.
	{name: "enum reordered", old: `{"enum":["a",1,{"x":1,"y":2}]}`, new: `{"enum":[{"y":2,"x":1},1.0,"a"]}`, dir: diff.Both},
	// A type added beside an enum that already implied it: no change.
	{name: "type beside enum", old: `{"enum":["a","b"]}`, new: `{"type":"string","enum":["a","b"]}`, dir: diff.Both},

	// Optional field removed from a request, unknown properties still
	// accepted: old clients' field is ignored; not breaking.
	{name: "optional field removed request", old: `{"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`,
		new: `{"properties":{"a":{"type":"string"}}}`, dir: diff.Request, kinds: []diff.Kind{diff.KindFieldRemoved}},
	// Optional field removed from a response: the new server simply omits
	// it; not breaking.
	{name: "optional field removed response", old: `{"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`,
		new: `{"properties":{"a":{"type":"string"}}}`, dir: diff.Response, kinds: []diff.Kind{diff.KindFieldRemoved}},
	// Required field removed from a response: old clients require it;
	// breaking, field_removed.
	{name: "required field removed response", old: `{"properties":{"a":{"type":"string"}},"required":["a"]}`,
		new: `{"properties":{}}`, dir: diff.Response, breaking: true, kinds: []diff.Kind{diff.KindFieldRemoved}},
	// Required field removed from a request: old clients still send it and
	// the new server ignores it; not breaking.
	{name: "required field removed request", old: `{"properties":{"a":{"type":"string"}},"required":["a"]}`,
		new: `{"properties":{}}`, dir: diff.Request, kinds: []diff.Kind{diff.KindFieldRemoved}},
	// Field removed from a request whose new schema rejects unknown
	// properties: old clients' field is rejected; breaking.
	{name: "field removed closed request", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"properties":{},"additionalProperties":false}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindAdditionalPropertiesTightened, diff.KindFieldRemoved}},
	// Field removed, new schema keeps it in a map of integers: the old
	// string values are rejected; breaking for requests.
	{name: "field removed into map", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"additionalProperties":{"type":"integer"}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindFieldRemoved, diff.KindTypeChanged, diff.KindTypeChanged}},

	// Optional field added to a request: old clients never send it; not
	// breaking.
	{name: "optional field added request", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindFieldAdded}},
	// Optional field added to a response, old clients ignore unknown
	// properties: not breaking.
	{name: "optional field added response", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, dir: diff.Response,
		kinds: []diff.Kind{diff.KindFieldAdded}},
	// Optional field added to a response whose old schema rejects unknown
	// properties: old clients reject it; breaking.
	{name: "field added to closed response", old: `{"properties":{"a":{}},"additionalProperties":false}`,
		new: `{"properties":{"a":{},"b":{}},"additionalProperties":false}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindFieldAdded}},
	// The same, as a request: the new server accepts more; not breaking.
	{name: "field added to closed request", old: `{"properties":{"a":{}},"additionalProperties":false}`,
		new: `{"properties":{"a":{},"b":{}},"additionalProperties":false}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindFieldAdded}},
	// Required field added to a request: old clients do not send it;
	// breaking, required_field_added.
	{name: "required field added request", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"]}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindRequiredFieldAdded}},
	// Required field added to a response: old clients ignore it; not
	// breaking.
	{name: "required field added response", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"]}`, dir: diff.Response,
		kinds: []diff.Kind{diff.KindRequiredFieldAdded}},
	// Field renamed (same schema): valid JSON both ways, but each version
	// ignores the other's name; breaking either way, field_renamed.
	{name: "field renamed request", old: `{"properties":{"nodeName":{"type":"string"}}}`,
		new: `{"properties":{"node":{"type":"string"}}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindFieldRenamed}},
	{name: "field renamed response", old: `{"properties":{"nodeName":{"type":"string"}}}`,
		new: `{"properties":{"node":{"type":"string"}}}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindFieldRenamed}},
	// Optional→required in a request: old clients may omit it; breaking.
	{name: "now required request", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"properties":{"a":{"type":"string"}},"required":["a"]}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindFieldNowRequired}},
	// Optional→required in a response: the new server always sends it; not
	// breaking.
	{name: "now required response", old: `{"properties":{"a":{"type":"string"}}}`,
		new: `{"properties":{"a":{"type":"string"}},"required":["a"]}`, dir: diff.Response,
		kinds: []diff.Kind{diff.KindFieldNowRequired}},
	// Required→optional in a response: the new server may omit what old
	// clients require; breaking.
	{name: "now optional response", old: `{"properties":{"a":{"type":"string"}},"required":["a"]}`,
		new: `{"properties":{"a":{"type":"string"}}}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindFieldNowOptional}},
	// Required→optional in a request: not breaking.
	{name: "now optional request", old: `{"properties":{"a":{"type":"string"}},"required":["a"]}`,
		new: `{"properties":{"a":{"type":"string"}}}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindFieldNowOptional}},

	// integer→number widens: fine for a request.
	{name: "integer to number request", old: `{"type":"integer"}`, new: `{"type":"number"}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindTypeChanged}},
	// integer→number widens: breaking for a response.
	{name: "integer to number response", old: `{"type":"integer"}`, new: `{"type":"number"}`, dir: diff.Response,
		breaking: true, kinds: []diff.Kind{diff.KindTypeChanged}},
	// number→integer narrows: breaking for a request.
	{name: "number to integer request", old: `{"type":"number"}`, new: `{"type":"integer"}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindTypeChanged}},
	// number→integer narrows: fine for a response.
	{name: "number to integer response", old: `{"type":"number"}`, new: `{"type":"integer"}`, dir: diff.Response,
		kinds: []diff.Kind{diff.KindTypeChanged}},
	// string→integer narrows and widens: breaking even for a request.
	{name: "string to integer request", old: `{"type":"string"}`, new: `{"type":"integer"}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindTypeChanged}},
	// type array gains a type: widening; breaking for a response.
	{name: "type array widened response", old: `{"type":["string","integer"]}`, new: `{"type":["string","number","boolean"]}`,
		dir: diff.Response, breaking: true, kinds: []diff.Kind{diff.KindTypeChanged}},
	// type removed altogether: anything accepted now; breaking for a
	// response.
	{name: "type removed response", old: `{"type":"string"}`, new: `{}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindTypeChanged}},
	// Nullable removed in a request: old clients may send null; breaking.
	{name: "nullable removed request", old: `{"type":["string","null"]}`, new: `{"type":"string"}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindNullableRemoved}},
	// Nullable added in a response: old clients reject null; breaking.
	{name: "nullable added response", old: `{"type":"string"}`, new: `{"type":["string","null"]}`, dir: diff.Response,
		breaking: true, kinds: []diff.Kind{diff.KindNullableAdded}},
	// Nullable added in a request: not breaking.
	{name: "nullable added request", old: `{"type":"string"}`, new: `{"type":["null","string"]}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindNullableAdded}},
	// Nullable added through anyOf with a null alternative, in a response:
	// breaking, nullable_added.
	{name: "nullable via anyOf response", old: `{"type":"string","maxLength":5}`,
		new: `{"anyOf":[{"type":"string","maxLength":5},{"type":"null"}]}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindNullableAdded}},
	// The same in a request: not breaking.
	{name: "nullable via anyOf request", old: `{"$ref":"#/$defs/S","$defs":{"S":{"type":"string"}}}`,
		new: `{"oneOf":[{"$ref":"#/$defs/S"},{"type":"null"}],"$defs":{"S":{"type":"string"}}}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindNullableAdded}},

	// Enum value added to a request: not breaking.
	{name: "enum value added request", old: `{"enum":["a","b"]}`, new: `{"enum":["a","b","c"]}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindEnumValueAdded}},
	// Enum value added to a response: old clients reject it; breaking.
	{name: "enum value added response", old: `{"enum":["a","b"]}`, new: `{"enum":["a","b","c"]}`, dir: diff.Response,
		breaking: true, kinds: []diff.Kind{diff.KindEnumValueAdded}},
	// Enum value removed from a request: old clients may send it; breaking.
	{name: "enum value removed request", old: `{"type":"string","enum":["a","b"]}`, new: `{"type":"string","enum":["a"]}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindEnumValueRemoved}},
	// Enum introduced on a free string in a request: breaking, enum_added.
	{name: "enum added request", old: `{"type":"string"}`, new: `{"type":"string","enum":["a"]}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindEnumAdded}},
	// Enum dropped from a response: breaking, enum_removed.
	{name: "enum removed response", old: `{"type":"string","enum":["a"]}`, new: `{"type":"string"}`, dir: diff.Response,
		breaking: true, kinds: []diff.Kind{diff.KindEnumRemoved}},
	// const changed: both narrows and widens; breaking for a request.
	{name: "const changed request", old: `{"const":"v1"}`, new: `{"const":"v2"}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindConstChanged}},
	// const added to a response: narrowing; not breaking.
	{name: "const added response", old: `{"type":"string"}`, new: `{"type":"string","const":"x"}`, dir: diff.Response,
		kinds: []diff.Kind{diff.KindConstAdded}},
	// const widened to an enum in a response: breaking.
	{name: "const to enum response", old: `{"const":"a"}`, new: `{"enum":["a","b"]}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindEnumValueAdded}},

	// An enum of objects keeps its value, but a property declared beside it
	// now rejects that value, in a request: breaking.
	{name: "enum object rejected request", old: `{"enum":[{"a":1}]}`,
		new: `{"enum":[{"a":1}],"properties":{"a":{"type":"string"}}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindEnumValueRemoved, diff.KindFieldAdded}},
	// additionalProperties true→false in a request: breaking.
	{name: "additionalProperties tightened request", old: `{"additionalProperties":true}`,
		new: `{"additionalProperties":false}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindAdditionalPropertiesTightened}},
	// additionalProperties absent→false in a response: not breaking.
	{name: "additionalProperties tightened response", old: `{"type":"object"}`,
		new: `{"type":"object","additionalProperties":false}`, dir: diff.Response,
		kinds: []diff.Kind{diff.KindAdditionalPropertiesTightened}},
	// additionalProperties false→absent in a response: breaking.
	{name: "additionalProperties loosened response", old: `{"additionalProperties":false}`, new: `{}`,
		dir: diff.Response, breaking: true, kinds: []diff.Kind{diff.KindAdditionalPropertiesLoosened}},
	// A map's value schema widens (string→string|integer) in a response:
	// breaking, type_changed at /additionalProperties.
	{name: "map values widened response", old: `{"additionalProperties":{"type":"string"}}`,
		new: `{"additionalProperties":{"type":["string","integer"]}}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindTypeChanged}},
	// A free object becomes a map of strings in a request: breaking.
	{name: "map introduced request", old: `{"type":"object"}`,
		new: `{"type":"object","additionalProperties":{"type":"string"}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindTypeChanged}},
	// patternProperties added where unknown properties were rejected, in a
	// response: breaking.
	{name: "pattern property added to closed response", old: `{"additionalProperties":false}`,
		new: `{"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false}`, dir: diff.Response,
		breaking: true, kinds: []diff.Kind{diff.KindPatternPropertyAdded}},
	// patternProperties value narrowed in a request: breaking.
	{name: "pattern property narrowed request", old: `{"patternProperties":{"^x-":{"type":"number"}}}`,
		new: `{"patternProperties":{"^x-":{"type":"integer"}}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindTypeChanged}},
	// propertyNames constrained in a request: breaking, pattern_added.
	{name: "propertyNames added request", old: `{"type":"object"}`,
		new: `{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindPatternAdded}},
	// dependentRequired added in a request: breaking.
	{name: "dependency added request", old: `{"properties":{"a":{},"b":{}}}`,
		new: `{"properties":{"a":{},"b":{}},"dependentRequired":{"a":["b"]}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindDependencyAdded}},
	// draft-7 dependencies and 2019-09+ dependentRequired mean the same:
	// no change.
	{name: "dependencies spelling", old: `{` + draft07 + `"dependencies":{"a":["b"]}}`,
		new: `{"dependentRequired":{"a":["b"]}}`, dir: diff.Both},
	// minProperties added in a request: breaking.
	{name: "minProperties added request", old: `{"type":"object"}`, new: `{"type":"object","minProperties":1}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindBoundTightened}},

	// Pattern added to a request: breaking.
	{name: "pattern added request", old: `{"type":"string"}`, new: `{"type":"string","pattern":"^[a-z]+$"}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindPatternAdded}},
	// Pattern removed from a response: breaking.
	{name: "pattern removed response", old: `{"type":"string","pattern":"^[a-z]+$"}`, new: `{"type":"string"}`,
		dir: diff.Response, breaking: true, kinds: []diff.Kind{diff.KindPatternRemoved}},
	// Pattern removed from a request: not breaking.
	{name: "pattern removed request", old: `{"type":"string","pattern":"^[a-z]+$"}`, new: `{"type":"string"}`,
		dir: diff.Request, kinds: []diff.Kind{diff.KindPatternRemoved}},
	// Two different patterns cannot be compared: breaking even for a
	// request whose new pattern looks wider.
	{name: "pattern changed request", old: `{"type":"string","pattern":"^[a-z]+$"}`,
		new: `{"type":"string","pattern":"^[a-z0-9]+$"}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindPatternChanged}},
	// Format added to a request: breaking.
	{name: "format added request", old: `{"type":"string"}`, new: `{"type":"string","format":"date-time"}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindFormatAdded}},
	// Format changed: undecidable, breaking for a response.
	{name: "format changed response", old: `{"type":"string","format":"date"}`,
		new: `{"type":"string","format":"date-time"}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindFormatChanged}},
	// minLength raised in a request: breaking.
	{name: "minLength raised request", old: `{"type":"string","minLength":1}`, new: `{"type":"string","minLength":3}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindBoundTightened}},
	// minLength raised in a response: not breaking.
	{name: "minLength raised response", old: `{"type":"string","minLength":1}`, new: `{"type":"string","minLength":3}`,
		dir: diff.Response, kinds: []diff.Kind{diff.KindBoundTightened}},
	// minLength 0 means no minimum: no change.
	{name: "minLength zero", old: `{"type":"string"}`, new: `{"type":"string","minLength":0}`, dir: diff.Both},
	// maxLength raised in a response: breaking.
	{name: "maxLength raised response", old: `{"type":"string","maxLength":10}`, new: `{"type":"string","maxLength":20}`,
		dir: diff.Response, breaking: true, kinds: []diff.Kind{diff.KindBoundLoosened}},
	// minimum 0 becomes exclusiveMinimum 0 in a request: 0 is rejected;
	// breaking.
	{name: "minimum made exclusive request", old: `{"type":"number","minimum":0}`,
		new: `{"type":"number","exclusiveMinimum":0}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindBoundTightened}},
	// draft-4 boolean exclusiveMinimum and 2020-12 numeric one say the same:
	// no change.
	{name: "draft 4 exclusive minimum", old: `{` + draft04 + `"type":"number","minimum":0,"exclusiveMinimum":true}`,
		new: `{"type":"number","exclusiveMinimum":0}`, dir: diff.Both},
	// maximum lowered in a request: breaking.
	{name: "maximum lowered request", old: `{"type":"integer","maximum":100}`, new: `{"type":"integer","maximum":10}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindBoundTightened}},
	// multipleOf 2→4 in a request: odd multiples of 2 are rejected;
	// breaking.
	{name: "multipleOf narrowed request", old: `{"type":"integer","multipleOf":2}`,
		new: `{"type":"integer","multipleOf":4}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindMultipleOfChanged}},
	// multipleOf 4→2 in a request: not breaking.
	{name: "multipleOf widened request", old: `{"type":"integer","multipleOf":4}`,
		new: `{"type":"integer","multipleOf":2}`, dir: diff.Request, kinds: []diff.Kind{diff.KindMultipleOfChanged}},

	// Item type widened in a response: breaking, at /items.
	{name: "items widened response", old: `{"type":"array","items":{"type":"integer"}}`,
		new: `{"type":"array","items":{"type":"number"}}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindTypeChanged}},
	// maxItems lowered in a request: breaking.
	{name: "maxItems lowered request", old: `{"type":"array","maxItems":10}`, new: `{"type":"array","maxItems":5}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindBoundTightened}},
	// uniqueItems added in a request: breaking.
	{name: "uniqueItems added request", old: `{"type":"array"}`, new: `{"type":"array","uniqueItems":true}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindUniqueItemsAdded}},
	// contains added in a request: breaking.
	{name: "contains added request", old: `{"type":"array"}`, new: `{"type":"array","contains":{"const":1}}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindConstraintAdded}},
	// A draft-7 tuple and the same 2020-12 tuple: no change.
	{name: "tuple spelling", old: `{` + draft07 + `"items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`,
		new: `{"prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`, dir: diff.Both},
	// A closed tuple gains a position, in a response: breaking, now_allowed.
	{name: "tuple extended response", old: `{"prefixItems":[{"type":"string"}],"items":false}`,
		new: `{"prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`, dir: diff.Response,
		breaking: true, kinds: []diff.Kind{diff.KindNowAllowed}},

	// A property's schema becomes false in a request: breaking.
	{name: "property forbidden request", old: `{"properties":{"a":true}}`, new: `{"properties":{"a":false}}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindNowForbidden}},
	// A property's schema becomes true in a response: breaking.
	{name: "property allowed response", old: `{"properties":{"a":false}}`, new: `{"properties":{"a":true}}`,
		dir: diff.Response, breaking: true, kinds: []diff.Kind{diff.KindNowAllowed}},
	// Whole message true→false: breaking for a request.
	{name: "boolean root", old: `true`, new: `false`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindNowForbidden}},

	// A $ref followed to a definition whose field type changed: breaking
	// for a request, reported at the definition.
	{name: "ref target changed request", old: `{"$ref":"#/$defs/A","$defs":{"A":{"properties":{"x":{"type":"number"}}}}}`,
		new: `{"$ref":"#/$defs/A","$defs":{"A":{"properties":{"x":{"type":"integer"}}}}}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindTypeChanged}},
	// A $ref and the inline schema it names: no change.
	{name: "ref versus inline", old: `{"properties":{"c":{"$ref":"#/$defs/C"}},"$defs":{"C":{"type":"string"}}}`,
		new: `{"properties":{"c":{"type":"string"}}}`, dir: diff.Both},
	// draft-7 definitions and 2020-12 $defs: no change.
	{name: "definitions versus defs", old: `{` + draft07 + `"properties":{"c":{"$ref":"#/definitions/C"}},"definitions":{"C":{"type":"string"}}}`,
		new: `{"properties":{"c":{"$ref":"#/$defs/C"}},"$defs":{"C":{"type":"string"}}}`, dir: diff.Both},
	// draft-7 ignores keywords beside $ref: no change.
	{name: "draft 7 ref siblings ignored", old: `{` + draft07 + `"$ref":"#/definitions/C","type":"integer","definitions":{"C":{"type":"string"}}}`,
		new: `{"$ref":"#/$defs/C","$defs":{"C":{"type":"string"}}}`, dir: diff.Both},
	// Recursion through "#": an unchanged recursive schema; no change.
	{name: "recursive unchanged", old: `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`,
		new: `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`, dir: diff.Both},
	// Recursion with a change: reported once.
	{name: "recursive changed request", old: `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`,
		new: `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"children":{"type":"array","items":{"$ref":"#"}}}}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindBoundTightened}},

	// anyOf gains an alternative, in a request: not breaking.
	{name: "anyOf added request", old: `{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
		new: `{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, dir: diff.Request,
		kinds: []diff.Kind{diff.KindAlternativeAdded}},
	// anyOf gains an alternative, in a response: breaking.
	{name: "anyOf added response", old: `{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
		new: `{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, dir: diff.Response,
		breaking: true, kinds: []diff.Kind{diff.KindAlternativeAdded}},
	// anyOf loses an alternative, in a request: breaking.
	{name: "anyOf removed request", old: `{"anyOf":[{"$ref":"#/$defs/A"},{"$ref":"#/$defs/B"}],"$defs":{"A":{"type":"string"},"B":{"type":"integer"}}}`,
		new: `{"anyOf":[{"$ref":"#/$defs/B"}],"$defs":{"A":{"type":"string"},"B":{"type":"integer"}}}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindAlternativeRemoved}},
	// Tagged oneOf gains a disjoint variant, in a request: not breaking.
	{name: "oneOf tagged added request",
		old: `{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]}]}`,
		new: `{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind"]}]}`,
		dir: diff.Request, kinds: []diff.Kind{diff.KindAlternativeAdded}},
	// The same without "type": "object": numbers, strings and the like pass
	// both alternatives, so they overlap; breaking.
	{name: "oneOf tag without type request",
		old: `{"oneOf":[{"properties":{"kind":{"const":"a"}},"required":["kind"]}]}`,
		new: `{"oneOf":[{"properties":{"kind":{"const":"a"}},"required":["kind"]},{"properties":{"kind":{"const":"b"}},"required":["kind"]}]}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindAlternativeAdded}},
	// Untagged oneOf gains an overlapping alternative, in a request: a value
	// matching both now fails; breaking.
	{name: "oneOf overlapping added request", old: `{"oneOf":[{"type":"object","required":["a"]}]}`,
		new: `{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindAlternativeAdded}},
	// A tagged variant's field narrows, in a request: paired by tag, then
	// compared; breaking.
	{name: "oneOf variant changed request",
		old: `{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"n":{"type":"number"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]}]}`,
		new: `{"oneOf":[{"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"a"},"n":{"type":"integer"}},"required":["kind"]}]}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindTypeChanged}},
	// An untagged oneOf alternative widens, in a request: it may now match
	// values the other alternative matches, which oneOf rejects; breaking.
	// (-3 matched only the second before and matches both now.)
	{name: "oneOf alternative widened request", old: `{"oneOf":[{"type":"integer","minimum":0},{"type":"number","maximum":-1}]}`,
		new: `{"oneOf":[{"type":"integer","minimum":-5},{"type":"number","maximum":-1}]}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindBoundLoosened, diff.KindOneOfOverlap}},
	// anyOf→oneOf over overlapping alternatives, in a request: breaking.
	{name: "anyOf to oneOf request", old: `{"anyOf":[{"type":"number"},{"type":"integer"}]}`,
		new: `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindCombinatorChanged}},
	// anyOf→oneOf over disjoint alternatives: no wire change.
	{name: "anyOf to oneOf disjoint", old: `{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
		new: `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, dir: diff.Both,
		kinds: []diff.Kind{diff.KindCombinatorChanged}},
	// allOf gains an entry, in a request: breaking, constraint_added.
	{name: "allOf added request", old: `{"allOf":[{"type":"object"}]}`,
		new: `{"allOf":[{"type":"object"},{"required":["a"]}]}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindConstraintAdded}},
	// not added, in a request: breaking.
	{name: "not added request", old: `{"type":"string"}`, new: `{"type":"string","not":{"const":""}}`,
		dir: diff.Request, breaking: true, kinds: []diff.Kind{diff.KindConstraintAdded}},
	// An enum value added inside "not" excludes one more value, so it
	// narrows: breaking for a request.
	{name: "inside not request", old: `{"not":{"enum":["a"]}}`, new: `{"not":{"enum":["a","b"]}}`, dir: diff.Request,
		breaking: true, kinds: []diff.Kind{diff.KindEnumValueAdded}},
	// ... and therefore not breaking for a response.
	{name: "inside not response", old: `{"not":{"enum":["a"]}}`, new: `{"not":{"enum":["a","b"]}}`, dir: diff.Response,
		kinds: []diff.Kind{diff.KindEnumValueAdded}},
	// if condition changed: undecidable, breaking.
	{name: "if changed request", old: `{"if":{"required":["a"]},"then":{"required":["b"]}}`,
		new: `{"if":{"required":["c"]},"then":{"required":["b"]}}`, dir: diff.Request, breaking: true,
		kinds: []diff.Kind{diff.KindConditionChanged}},
	// then branch loosened, same condition, in a request: not breaking.
	{name: "then loosened request", old: `{"if":{"required":["a"]},"then":{"required":["b"]}}`,
		new: `{"if":{"required":["a"]},"then":{}}`, dir: diff.Request, kinds: []diff.Kind{diff.KindFieldNowOptional}},

	// Default changed: reported, never breaking.
	{name: "default changed", old: `{"type":"integer","default":1}`, new: `{"type":"integer","default":2}`,
		dir: diff.Both, kinds: []diff.Kind{diff.KindDefaultChanged}},
	// A message used both ways: an optional field added is fine both ways.
	{name: "both field added", old: `{"properties":{"a":{}}}`, new: `{"properties":{"a":{},"b":{}}}`, dir: diff.Both,
		kinds: []diff.Kind{diff.KindFieldAdded}},
	// A message used both ways: an enum value added breaks the response use.
	{name: "both enum value added", old: `{"enum":[1]}`, new: `{"enum":[1,2]}`, dir: diff.Both, breaking: true,
		kinds: []diff.Kind{diff.KindEnumValueAdded}},
	// A message used both ways: an enum value removed breaks the request use.
	{name: "both enum value removed", old: `{"enum":[1,2]}`, new: `{"enum":[1]}`, dir: diff.Both, breaking: true,
		kinds: []diff.Kind{diff.KindEnumValueRemoved}},
	// Keywords for a type the schema no longer accepts are skipped: only
	// the type change is reported.
	{name: "type switch skips keywords", old: `{"type":"string","maxLength":3}`,
		new: `{"type":"object","properties":{"a":{}}}`, dir: diff.Response, breaking: true,
		kinds: []diff.Kind{diff.KindTypeChanged}},
}

func TestCompatibleTable(t *testing.T) {
	t.Parallel()
	for _, row := range schemaPairs {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			changes, err := diff.Compatible(json.RawMessage(row.old), json.RawMessage(row.new), row.dir)
			if err != nil {
				t.Fatalf("Compatible: %v", err)
			}
			var kinds []diff.Kind
			breaking := false
			for _, change := range changes {
				kinds = append(kinds, change.Kind)
				breaking = breaking || change.Breaking
				if change.Message == "" {
					t.Errorf("change without message: %+v", change)
				}
				if change.Path != "" && !strings.HasPrefix(change.Path, "/") {
					t.Errorf("path %q is not a JSON pointer", change.Path)
				}
			}
			slices.Sort(kinds)
			if breaking != row.breaking || !slices.Equal(kinds, row.kinds) {
				t.Errorf("got breaking=%t kinds=%v, want breaking=%t kinds=%v\nchanges: %s",
					breaking, kinds, row.breaking, row.kinds, describe(changes))
			}
		})
	}
}

// TestCompatibleIsSymmetric checks, on every table row, that a change which
// narrows from old to new widens from new to old: the request verdict of
// (old, new) is the response verdict of (new, old).
func TestCompatibleIsSymmetric(t *testing.T) {
	t.Parallel()
	for _, row := range schemaPairs {
		forward, err := diff.Compatible(json.RawMessage(row.old), json.RawMessage(row.new), diff.Request)
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		backward, err := diff.Compatible(json.RawMessage(row.new), json.RawMessage(row.old), diff.Response)
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		if anyBreaking(forward) != anyBreaking(backward) {
			t.Errorf("%s: request old→new breaking=%t but response new→old breaking=%t\nforward: %s\nbackward: %s",
				row.name, anyBreaking(forward), anyBreaking(backward), describe(forward), describe(backward))
		}
	}
}

func anyBreaking(changes []diff.Change) bool {
	for _, change := range changes {
		if change.Breaking {
			return true
		}
	}
	return false
}

func describe(changes []diff.Change) string {
	var b strings.Builder
	for _, change := range changes {
		b.WriteString("\n  ")
		b.WriteString(string(change.Kind))
		b.WriteString(" ")
		b.WriteString(change.Path)
		b.WriteString(": ")
		b.WriteString(change.Message)
	}
	return b.String()
}

func TestCompatiblePaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// old and new are the schemas compared as a request.
		old, new string
		// path is the expected path of the single change.
		path string
	}{
		{"root keyword", `{"type":"string"}`, `{"type":"integer"}`, "/type"},
		{"nested property", `{"properties":{"a":{"properties":{"b":{"maxLength":3}}}}}`,
			`{"properties":{"a":{"properties":{"b":{"maxLength":2}}}}}`, "/properties/a/properties/b/maxLength"},
		{"behind a ref", `{"properties":{"c":{"$ref":"#/$defs/C"}},"$defs":{"C":{"enum":[1,2]}}}`,
			`{"properties":{"c":{"$ref":"#/$defs/C"}},"$defs":{"C":{"enum":[1]}}}`, "/$defs/C/enum"},
		{"escaped name", `{"properties":{"a/b~c":{"type":"string"},"x y":{}}}`,
			`{"properties":{"a/b~c":{"type":"integer"},"x y":{}}}`, "/properties/a~1b~0c/type"},
		{"field only in new", `{}`, `{"properties":{"n":{}},"required":["n"]}`, "/properties/n"},
	}
	for _, test := range tests {
		changes, err := diff.Compatible(json.RawMessage(test.old), json.RawMessage(test.new), diff.Request)
		if err != nil {
			t.Fatalf("%s: %v", test.name, err)
		}
		if len(changes) != 1 || changes[0].Path != test.path {
			t.Errorf("%s: got %s, want one change at %s", test.name, describe(changes), test.path)
		}
	}
}

func TestCompatibleMessages(t *testing.T) {
	t.Parallel()
	changes, err := diff.Compatible(json.RawMessage(`{"type":"integer","minimum":0}`),
		json.RawMessage(`{"type":"number","minimum":1}`), diff.Response)
	if err != nil {
		t.Fatal(err)
	}
	want := []diff.Change{
		{Path: "/minimum", Kind: diff.KindBoundTightened, Breaking: false, BreaksNewClient: true,
			Message: "lower bound tightened from >= 0 to >= 1; old servers may send values new clients reject"},
		{Path: "/type", Kind: diff.KindTypeChanged, Breaking: true,
			Message: "type changed from integer to number; the new server may send values old clients reject"},
	}
	if !slices.Equal(changes, want) {
		t.Errorf("got %#v\nwant %#v", changes, want)
	}
}

func TestCompatibleAt(t *testing.T) {
	t.Parallel()
	oldDoc := json.RawMessage(`{"$defs":{"Condition":{"properties":{"status":{"enum":["True","False"]}}},"Other":{"type":"string"}}}`)
	newDoc := json.RawMessage(`{"$defs":{"Condition":{"properties":{"status":{"enum":["True","False","Unknown"]}}},"Other":{"type":"integer"}}}`)
	changes, err := diff.CompatibleAt(oldDoc, "/$defs/Condition", newDoc, "/$defs/Condition", diff.Request)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Kind != diff.KindEnumValueAdded || changes[0].Breaking ||
		changes[0].Path != "/$defs/Condition/properties/status/enum" {
		t.Errorf("got %s, want one non-breaking enum_value_added", describe(changes))
	}
	changes, err = diff.CompatibleAt(oldDoc, "/$defs/Other", newDoc, "/$defs/Other", diff.Request)
	if err != nil {
		t.Fatal(err)
	}
	if !anyBreaking(changes) {
		t.Errorf("Other changed type; got %s", describe(changes))
	}
}

func TestCompatibleErrors(t *testing.T) {
	t.Parallel()
	valid := json.RawMessage(`{"type":"string"}`)
	tests := []struct {
		name string
		// old and new are the two schemas; pointer addresses old.
		old, new json.RawMessage
		pointer  string
		dir      diff.Direction
		// want is a fragment of the expected error.
		want string
	}{
		{"bad JSON", json.RawMessage(`{"type":`), valid, "", diff.Request, "old schema: schema is not valid JSON"},
		{"empty", valid, nil, "", diff.Request, "new schema: schema is empty"},
		{"not a schema", json.RawMessage(`42`), valid, "", diff.Request, "invalid schema"},
		{"meta-invalid", valid, json.RawMessage(`{"type":"text"}`), "", diff.Request, "new schema: invalid schema"},
		{"bad regex", json.RawMessage(`{"pattern":"(?=x)"}`), valid, "", diff.Request, "invalid schema"},
		{"external ref", json.RawMessage(`{"$ref":"other.json"}`), valid, "", diff.Request, "bundle it into the schema"},
		{"file ref", json.RawMessage(`{"$ref":"file:///etc/hostname"}`), valid, "", diff.Request, "bundle it into the schema"},
		{"unknown draft", json.RawMessage(`{"$schema":"https://example.com/meta"}`), valid, "", diff.Request, "bundle it into the schema"},
		{"missing pointer", valid, valid, "/$defs/Nope", diff.Request, "old schema"},
		{"relative pointer", valid, valid, "$defs", diff.Request, "JSON pointer"},
		{"bad direction", valid, valid, "", diff.Direction(0), "unknown direction"},
	}
	for _, test := range tests {
		_, err := diff.CompatibleAt(test.old, test.pointer, test.new, "", test.dir)
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: got error %v, want one containing %q", test.name, err, test.want)
		}
	}
}

func TestCompatibleOnManyAlternatives(t *testing.T) {
	t.Parallel()
	// 400 alternatives on each side, each different: matching them pairwise
	// and comparing in full must stay within the work bound.
	var oldAlts, newAlts []string
	for i := range 400 {
		oldAlts = append(oldAlts, `{"properties":{"k":{"const":`+itoa(i)+`}},"required":["k"],"minProperties":`+itoa(i)+`}`)
		newAlts = append(newAlts, `{"properties":{"k":{"const":`+itoa(i+1)+`}},"required":["k"],"maxProperties":`+itoa(i+1000)+`}`)
	}
	changes, err := diff.Compatible(json.RawMessage(`{"oneOf":[`+strings.Join(oldAlts, ",")+`]}`),
		json.RawMessage(`{"oneOf":[`+strings.Join(newAlts, ",")+`]}`), diff.Request)
	if err != nil {
		t.Fatal(err)
	}
	if !anyBreaking(changes) {
		t.Errorf("alternatives changed, want breaking; got %d changes", len(changes))
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
