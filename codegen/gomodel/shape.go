package gomodel

// The shapes of Go values, as fork conversions pair them and as the
// renderer converts and checks them: one definition for both.

// IsSlice reports whether r is a slice: []T or a named slice type.
func IsSlice(r *TypeRef) bool {
	return r.Kind == RefSlice || r.Kind == RefNamed && r.Named.Kind == KindSlice
}

// SliceElem is the item type of a slice ([IsSlice] of r resolved).
func SliceElem(r *TypeRef) *TypeRef {
	r = r.Resolve()
	if r.Kind == RefSlice {
		return r.Elem
	}
	return r.Named.Elem
}

// IsMap reports whether r is a map: map[string]T or a named map type.
func IsMap(r *TypeRef) bool {
	return r.Kind == RefMap || r.Kind == RefNamed && r.Named.Kind == KindMap
}

// MapElem is the value type of a map ([IsMap]).
func MapElem(r *TypeRef) *TypeRef {
	if r.Kind == RefMap {
		return r.Elem
	}
	return r.Named.Elem
}

// ScalarKind names the Go kind family of a scalar type: "string",
// "number", "bool", or "" for anything else. Scalars of one family
// convert into each other with a Go conversion.
func ScalarKind(r *TypeRef) string {
	if r.Kind == RefNamed && (r.Named.Kind == KindEnum || r.Named.Kind == KindScalar) {
		return ScalarKind(r.Named.Elem.Resolve())
	}
	if r.Kind != RefBuiltin {
		return ""
	}
	switch r.Name {
	case "string":
		return "string"
	case "int64", "int32", "uint32", "uint64", "float64", "float32":
		return "number"
	case "bool":
		return "bool"
	}
	return ""
}

// SameShape reports whether two types hold the same kind of JSON, so that
// one converts into the other member by member (or, for unions, through
// JSON).
func SameShape(a, b *TypeRef) bool {
	ra, rb := a.Resolve(), b.Resolve()
	switch {
	case ra.Kind == RefPointer || rb.Kind == RefPointer:
		if ra.Kind == RefPointer {
			ra = ra.Elem
		}
		if rb.Kind == RefPointer {
			rb = rb.Elem
		}
		return SameShape(ra, rb)
	case IsSlice(ra) && IsSlice(rb):
		return SameShape(SliceElem(ra), SliceElem(rb))
	case IsMap(ra) && IsMap(rb):
		return SameShape(MapElem(ra), MapElem(rb))
	case ra.Kind == RefNamed && rb.Kind == RefNamed && ra.Named.Kind == rb.Named.Kind &&
		ra.Named.Kind != KindEnum && ra.Named.Kind != KindScalar:
		return true
	case ra.IsRaw() && rb.IsRaw():
		return true
	case ra.Kind == RefExternal || rb.Kind == RefExternal:
		return GoString(ra) == GoString(rb)
	}
	ka, kb := ScalarKind(ra), ScalarKind(rb)
	isTime := func(r *TypeRef) bool { return r.Kind == RefBuiltin && r.Name == "time.Time" }
	return ka != "" && ka == kb || isTime(ra) && (isTime(rb) || kb == "string") || isTime(rb) && ka == "string"
}

// Convertible reports whether two named kinds convert with a conversion
// function of their own ([Conversion]): structs, tuples and tagged unions,
// each into its own kind.
func Convertible(a, b Kind) bool {
	structured := func(k Kind) bool {
		return k == KindStruct || k == KindTuple || k == KindTaggedUnion
	}
	return a == b && structured(a)
}

// Shape is what a non-null Go value is as JSON, as the generated checks
// see it: which keywords apply to it and how they are checked.
type Shape int

// The shapes of Go values.
const (
	ShapeString  Shape = iota
	ShapeTime          // time.Time, a date-time string
	ShapeInt           // int64, int32, uint32
	ShapeUint64        // uint64
	ShapeFloat         // float64
	ShapeFloat32       // float32
	ShapeBool
	ShapeRaw // raw JSON, unions, x-go-types and anything else
	ShapeStruct
	ShapeMap
	ShapeSlice
	ShapeTuple
)

// ShapeOf returns the shape of a resolved type reference and the type it
// is checked as: for named scalars and enums their underlying type, else r.
func ShapeOf(r *TypeRef) (Shape, *TypeRef) {
	if r.Kind == RefNamed {
		t := r.Named
		switch t.Kind {
		case KindStruct:
			return ShapeStruct, r
		case KindMap:
			return ShapeMap, r
		case KindSlice:
			return ShapeSlice, r
		case KindTuple:
			return ShapeTuple, r
		case KindEnum, KindScalar:
			base := t.Elem.Resolve()
			sh, _ := ShapeOf(base)
			return sh, base
		}
		return ShapeRaw, r
	}
	switch r.Kind {
	case RefSlice:
		return ShapeSlice, r
	case RefMap:
		return ShapeMap, r
	}
	switch r.Name {
	case "string":
		return ShapeString, r
	case "time.Time":
		return ShapeTime, r
	case "int64", "int32", "uint32":
		return ShapeInt, r
	case "uint64":
		return ShapeUint64, r
	case "float64":
		return ShapeFloat, r
	case "float32":
		return ShapeFloat32, r
	case "bool":
		return ShapeBool, r
	}
	return ShapeRaw, r
}

// JSON returns the JSON types a value of the shape can be.
func (sh Shape) JSON() JSONTypes {
	switch sh {
	case ShapeString, ShapeTime:
		return JSONString
	case ShapeInt, ShapeUint64:
		return JSONInteger
	case ShapeFloat, ShapeFloat32:
		return JSONInteger | JSONNumber
	case ShapeBool:
		return JSONBoolean
	case ShapeStruct, ShapeMap:
		return JSONObject
	case ShapeSlice, ShapeTuple:
		return JSONArray
	}
	return JSONAll
}

// Scalar reports whether values of the shape compare with Go's ==, as
// uniqueItems needs.
func (sh Shape) Scalar() bool {
	switch sh {
	case ShapeString, ShapeInt, ShapeUint64, ShapeFloat, ShapeBool:
		return true
	}
	return false
}
