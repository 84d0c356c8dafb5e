// Package gomodel maps a loaded contract's JSON Schemas to a Go type model:
// the named types, their fields and how each field keeps absent, null and
// zero apart. The model is what the Go emitter renders, and what later
// generators (validators, fork-mode conversions) walk: every type and field
// keeps the normalised schema it came from ([Type.Schema], [Field.Schema]).
//
// The model also owns the decisions the emitter acts on: which types get
// generated checks ([Package.DecideValidation], [Type.Validation]) and, in
// fork mode, which conversions exist, their names and whether each is
// generated ([Fork.Conversion]). It is serialisable as JSON, which the
// golden tests compare without rendering a file.
//
// The mapping is faithful or it fails: a schema the model cannot express is
// an error naming the schema's file, line and pointer, never a silent
// interface{}.
package gomodel

import (
	"github.com/lockstep-dev/lockstep/codegen/contract"
)

// Package is the Go model of one contract version.
type Package struct {
	// Name is the Go package name.
	Name string `json:"name"`
	// Contract is the loaded contract the model was built from.
	Contract *contract.Contract `json:"-"`
	// Types are the named types, sorted by name.
	Types []*Type `json:"types"`
	// Messages maps each message name to its type.
	Messages map[string]*Type `json:"-"`
	// Fork is the version this one forks from (the contract's forkFrom),
	// whose types the fork-mode conversions convert to and from; nil
	// without forkFrom.
	Fork *Fork `json:"fork,omitempty"`
	// Warnings name the lossy choices the model made, each with the
	// file, line and JSON pointer of the schema at fault: constructs Go
	// cannot express exactly, given the closest faithful type (validation
	// stays exact, since a type whose schema generated checks do not
	// cover is validated by jsonschema/v5).
	Warnings []string `json:"warnings,omitempty"`
}

// Fork is the earlier version a package converts to and from.
type Fork struct {
	// Old is the model of the earlier version's package.
	Old *Package `json:"-"`
	// Import is its Go import path, and Alias the name this package
	// imports it under.
	Import string `json:"import"`
	Alias  string `json:"alias"`
	// Conversions are the conversion functions the package has, in the
	// order they were first asked for ([Fork.Conversion]).
	Conversions []*Conversion `json:"conversions,omitempty"`
	// Compatible is true when the change from the earlier version is
	// compatible both ways and every conversion is generated
	// ([Fork.DecideCompatible]): both sides speak both versions by
	// default. NotCompatible says why not, otherwise.
	Compatible    bool   `json:"compatible,omitempty"`
	NotCompatible string `json:"notCompatible,omitempty"`

	byName  map[string]*Conversion
	bundles map[*Type]located
}

// Kind says what Go shape a named [Type] has.
type Kind string

// The kinds of named type.
const (
	// KindStruct is an object with declared properties: a struct, with an
	// [Extra] map when undeclared members are allowed.
	KindStruct Kind = "struct"
	// KindMap is an object with only additional or pattern properties.
	KindMap Kind = "map"
	// KindSlice is an array of one item type.
	KindSlice Kind = "slice"
	// KindTuple is an array with positional items (prefixItems): a struct
	// encoded as an array.
	KindTuple Kind = "tuple"
	// KindScalar is a named string, number, integer, boolean or time.
	KindScalar Kind = "scalar"
	// KindEnum is a scalar with named constants.
	KindEnum Kind = "enum"
	// KindTaggedUnion is a oneOf/anyOf whose variants a member with a
	// constant value tells apart: one pointer field per variant.
	KindTaggedUnion Kind = "taggedUnion"
	// KindUnion is a oneOf/anyOf, or a multi-type schema, without a
	// discriminator: the raw JSON with typed As/From accessors.
	KindUnion Kind = "union"
	// KindAlias is another name for a type: a reference to another message,
	// raw JSON, or an x-go-type.
	KindAlias Kind = "alias"
)

// Type is a named Go type of the generated package.
type Type struct {
	// Name is the Go type name.
	Name string `json:"name"`
	// Kind is its shape.
	Kind Kind `json:"kind"`
	// Doc is the schema's title and description, for the doc comment.
	Doc string `json:"doc,omitempty"`
	// Schema is the normalised schema the type maps.
	Schema *contract.Node `json:"-"`
	// Source is where the schema was written ("file:line:col").
	Source string `json:"source"`
	// Nullable reports whether the schema also admits null, which uses of
	// the type account for.
	Nullable bool `json:"nullable,omitempty"`
	// Shared are the other schemas the type stands for: inline schemas
	// identical to Schema ([Type.StandsFor]), met after it in the
	// builder's walk, and SharedAt is where each was written. See
	// docs/codegen.md, Naming.
	Shared   []*contract.Node `json:"-"`
	SharedAt []string         `json:"sharedAt,omitempty"`

	// Fields are a struct's declared properties or a tuple's elements, in
	// schema order.
	Fields []*Field `json:"fields,omitempty"`
	// Extra holds a struct's undeclared members, when the schema allows any.
	Extra *Extra `json:"extra,omitempty"`
	// CaseInsensitive makes decoding match member names regardless of case.
	CaseInsensitive bool `json:"caseInsensitive,omitempty"`

	// Elem is a map's value type, a slice's item type, a scalar's or enum's
	// underlying type, or an alias's target.
	Elem *TypeRef `json:"elem,omitempty"`
	// Key is a map's key type when it is not string: the enum type of
	// the schema's propertyNames ([TypeRef.Key]).
	Key *TypeRef `json:"key,omitempty"`
	// Enum are an enum's values.
	Enum []*EnumValue `json:"enum,omitempty"`
	// Rest is a tuple's type for elements after its positional ones, or nil
	// when there may be none.
	Rest *TypeRef `json:"rest,omitempty"`

	// Variants are a union's alternatives.
	Variants []*Variant `json:"variants,omitempty"`
	// Discriminator is a tagged union's member that tells variants apart.
	Discriminator string `json:"discriminator,omitempty"`

	// Message is the contract message the type is the root of, or "".
	Message string `json:"message,omitempty"`

	// Validation is whether the type gets generated checks, and why not:
	// decided by [Package.DecideValidation]; nil before and for aliases.
	Validation *Validation `json:"validation,omitempty"`
}

// RefKind says what a [TypeRef] refers to.
type RefKind string

// The kinds of type reference.
const (
	RefNamed    RefKind = "named"    // a named type of this package
	RefBuiltin  RefKind = "builtin"  // string, int64, float64, bool, time.Time, json.RawMessage, …
	RefSlice    RefKind = "slice"    // []Elem
	RefMap      RefKind = "map"      // map[string]Elem, or map[Key]Elem
	RefPointer  RefKind = "pointer"  // *Elem, where nil is JSON null
	RefExternal RefKind = "external" // an x-go-type from another package
)

// TypeRef is a use of a type.
type TypeRef struct {
	Kind RefKind `json:"kind"`
	// Named is the named type (RefNamed).
	Named *Type `json:"-"`
	// Name is the named type's name, the builtin's Go spelling, or the
	// external type's name.
	Name string `json:"name,omitempty"`
	// Elem is the element of a slice, map or pointer.
	Elem *TypeRef `json:"elem,omitempty"`
	// Key is a map's key type when it is not string: a string enum, when
	// the map's schema has propertyNames that is (or refers to) an enum of
	// strings, so that only its constants name members in Go as in JSON.
	Key *TypeRef `json:"key,omitempty"`
	// Import is the import path of an external type or of a builtin that
	// needs one ("time", "encoding/json").
	Import string `json:"import,omitempty"`
}

// Presence is how a field keeps its member's states apart.
type Presence string

// The ways a field keeps absent, null and values apart.
const (
	// PresenceValue: a required, non-null member, held as a value.
	PresenceValue Presence = "value"
	// PresencePointer: a pointer; nil is absent for an optional member, and
	// null for a required nullable one.
	PresencePointer Presence = "pointer"
	// PresenceOmitZero: a slice, map or raw JSON, tagged omitzero: nil is
	// absent (or, when required, null), empty is empty.
	PresenceOmitZero Presence = "omitzero"
	// PresenceNullable: an optional member that admits null, held in a
	// [jsonwire.Nullable]: absent, null and values all distinct.
	PresenceNullable Presence = "nullable"
)

// Field is a struct member or a tuple element.
type Field struct {
	// GoName is the Go field name.
	GoName string `json:"goName"`
	// JSONName is the member's name; for tuple elements it is empty and
	// Index is the position.
	JSONName string `json:"jsonName,omitempty"`
	Index    int    `json:"index,omitempty"`
	// Type is the value type, without the pointer or wrapper Presence adds.
	Type *TypeRef `json:"type"`
	// Required and Nullable are what the schema says of the member.
	Required bool `json:"required,omitempty"`
	Nullable bool `json:"nullable,omitempty"`
	// Presence is how the field holds the member.
	Presence Presence `json:"presence"`
	// Default is the schema's default, exposed by an accessor and never
	// written into decoded values.
	Default *contract.Node `json:"-"`
	// Schema is the member's normalised schema.
	Schema *contract.Node `json:"-"`
	// Doc is the member's title and description.
	Doc string `json:"doc,omitempty"`
}

// Extra is a struct's map of undeclared members.
type Extra struct {
	// GoName is the field's name (usually AdditionalProperties).
	GoName string `json:"goName"`
	// Value is the map's value type.
	Value *TypeRef `json:"value"`
}

// Variant is one alternative of a union.
type Variant struct {
	// Name is the variant's name: its field in a tagged union, the suffix of
	// As/From accessors in an untagged one.
	Name string `json:"name"`
	// Type is the variant's type.
	Type *TypeRef `json:"type"`
	// Tag is the discriminator value that selects it (tagged unions).
	Tag string `json:"tag,omitempty"`
	// Schema is the variant's schema.
	Schema *contract.Node `json:"-"`
}

// EnumValue is one constant of an enum.
type EnumValue struct {
	// GoName is the constant's name.
	GoName string `json:"goName"`
	// Value is the JSON value.
	Value *contract.Node `json:"-"`
	// Literal is the Go literal of the value.
	Literal string `json:"literal"`
}

// StandsFor reports whether t is the type of schema s: its own schema or
// one of the identical schemas it is shared by. Validators call t's checks
// for such an s instead of writing them out again.
func (t *Type) StandsFor(s *contract.Node) bool {
	if t.Schema == s {
		return true
	}
	for _, o := range t.Shared {
		if o == s {
			return true
		}
	}
	return false
}
