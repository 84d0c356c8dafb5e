package gogen

import (
	"math/big"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// The JSON types a schema admits and a Go type holds, and the shape of a
// Go value as JSON: what coverage and the type checks reason with.

// kinds is a set of JSON types; number means a number that is not an
// integer.
type kinds uint8

const (
	kNull kinds = 1 << iota
	kBoolean
	kInteger
	kNumber
	kString
	kArray
	kObject
	kAll = kNull | kBoolean | kInteger | kNumber | kString | kArray | kObject
)

func (k kinds) String() string {
	var parts []string
	for i, n := range []string{"null", "boolean", "integer", "number", "string", "array", "object"} {
		if k&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ", ")
}

func kindOfType(t string) kinds {
	switch t {
	case "null":
		return kNull
	case "boolean":
		return kBoolean
	case "integer":
		return kInteger
	case "number":
		return kInteger | kNumber
	case "string":
		return kString
	case "array":
		return kArray
	case "object":
		return kObject
	}
	return 0
}

func kindOfValue(n *node) kinds {
	switch n.Kind {
	case contract.KindNull:
		return kNull
	case contract.KindBool:
		return kBoolean
	case contract.KindNumber:
		if r, ok := new(big.Rat).SetString(n.Text); ok && r.IsInt() {
			return kInteger
		}
		return kNumber
	case contract.KindString:
		return kString
	case contract.KindArray:
		return kArray
	}
	return kObject
}

// admits over-approximates the JSON types a schema accepts.
func admits(s *node, depth int) kinds {
	if s == nil || depth > 64 {
		return kAll
	}
	if s.Kind == contract.KindBool {
		if s.Bool {
			return kAll
		}
		return 0
	}
	k := kAll
	if t := s.Get("type"); t != nil {
		var allowed kinds
		if t.Kind == contract.KindString {
			allowed = kindOfType(t.Text)
		}
		for _, it := range t.Items {
			allowed |= kindOfType(it.Text)
		}
		k &= allowed
	}
	if e := s.Get("enum"); e != nil {
		var allowed kinds
		for _, it := range e.Items {
			allowed |= kindOfValue(it)
		}
		k &= allowed
	}
	if c := s.Get("const"); c != nil {
		k &= kindOfValue(c)
	}
	if s.Ref != nil {
		k &= admits(s.Ref, depth+1)
	}
	if all := s.Get("allOf"); all != nil {
		for _, it := range all.Items {
			k &= admits(it, depth+1)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if list := s.Get(key); list != nil {
			var any kinds
			for _, it := range list.Items {
				any |= admits(it, depth+1)
			}
			k &= any
		}
	}
	return k
}

// holds returns the JSON types a Go type's decoder accepts.
func holds(r *gomodel.TypeRef) kinds {
	r = r.Resolve()
	switch r.Kind {
	case gomodel.RefPointer:
		return holds(r.Elem) | kNull
	case gomodel.RefSlice:
		return kArray | kNull
	case gomodel.RefMap:
		return kObject | kNull
	case gomodel.RefExternal:
		return 0
	case gomodel.RefBuiltin:
		switch r.Name {
		case "string", "time.Time":
			return kString
		case "int64", "int32", "uint32", "uint64":
			return kInteger
		case "float64", "float32":
			return kInteger | kNumber
		case "bool":
			return kBoolean
		case "json.RawMessage":
			return kAll
		}
		return 0
	}
	t := r.Named
	switch t.Kind {
	case gomodel.KindStruct, gomodel.KindTaggedUnion:
		return kObject
	case gomodel.KindMap:
		return kObject | kNull
	case gomodel.KindSlice:
		return kArray | kNull
	case gomodel.KindTuple:
		return kArray
	case gomodel.KindUnion:
		return kAll
	case gomodel.KindEnum, gomodel.KindScalar:
		return holds(t.Elem)
	}
	return 0
}

// fieldHolds returns the JSON types a struct member or tuple element
// accepts, with the null its presence can hold.
func fieldHolds(f *gomodel.Field) kinds {
	h := holds(f.Type)
	switch f.Presence {
	case gomodel.PresencePointer:
		h &^= kNull
		if f.Required && f.Nullable {
			h |= kNull
		}
	case gomodel.PresenceOmitZero:
		if !f.Type.IsRaw() {
			h &^= kNull
		}
	case gomodel.PresenceNullable:
		h |= kNull
	}
	return h
}

// acceptsNull evaluates a schema on null.
func acceptsNull(s *node, depth int) bool {
	if depth > 64 {
		return false
	}
	if s.Kind == contract.KindBool {
		return s.Bool
	}
	if t := s.Get("type"); t != nil && !admitsType(t, "null") {
		return false
	}
	if e := s.Get("enum"); e != nil {
		found := false
		for _, it := range e.Items {
			found = found || it.Kind == contract.KindNull
		}
		if !found {
			return false
		}
	}
	if c := s.Get("const"); c != nil && c.Kind != contract.KindNull {
		return false
	}
	if s.Ref != nil && !acceptsNull(s.Ref, depth+1) {
		return false
	}
	if all := s.Get("allOf"); all != nil {
		for _, it := range all.Items {
			if !acceptsNull(it, depth+1) {
				return false
			}
		}
	}
	if list := s.Get("anyOf"); list != nil {
		ok := false
		for _, it := range list.Items {
			ok = ok || acceptsNull(it, depth+1)
		}
		if !ok {
			return false
		}
	}
	if list := s.Get("oneOf"); list != nil {
		n := 0
		for _, it := range list.Items {
			if acceptsNull(it, depth+1) {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	if not := s.Get("not"); not != nil && acceptsNull(not, depth+1) {
		return false
	}
	if cond := s.Get("if"); cond != nil {
		branch := s.Get("else")
		if acceptsNull(cond, depth+1) {
			branch = s.Get("then")
		}
		if branch != nil && !acceptsNull(branch, depth+1) {
			return false
		}
	}
	return true
}

// admitsType reports whether a "type" keyword admits the named type.
func admitsType(t *node, name string) bool {
	if t.Kind == contract.KindString {
		return t.Text == name
	}
	for _, it := range t.Items {
		if it.Text == name {
			return true
		}
	}
	return false
}

// shape is what a non-null Go value is as JSON.
type shape int

const (
	shapeString shape = iota
	shapeTime
	shapeInt    // int64, int32, uint32
	shapeUint64 // uint64
	shapeFloat  // float64
	shapeFloat32
	shapeBool
	shapeRaw
	shapeStruct
	shapeMap
	shapeSlice
	shapeTuple
)

// shapeOf returns the shape of a resolved type reference, and for named
// scalars and enums the Go expression of the underlying value.
func shapeOf(r *gomodel.TypeRef, expr string) (shape, string, *gomodel.TypeRef) {
	if r.Kind == gomodel.RefNamed {
		t := r.Named
		switch t.Kind {
		case gomodel.KindStruct:
			return shapeStruct, expr, r
		case gomodel.KindMap:
			return shapeMap, expr, r
		case gomodel.KindSlice:
			return shapeSlice, expr, r
		case gomodel.KindTuple:
			return shapeTuple, expr, r
		case gomodel.KindEnum, gomodel.KindScalar:
			base := t.Elem.Resolve()
			sh, _, _ := shapeOf(base, expr)
			return sh, gomodel.GoString(base) + "(" + expr + ")", base
		}
		return shapeRaw, expr, r
	}
	switch r.Kind {
	case gomodel.RefSlice:
		return shapeSlice, expr, r
	case gomodel.RefMap:
		return shapeMap, expr, r
	}
	switch r.Name {
	case "string":
		return shapeString, expr, r
	case "time.Time":
		return shapeTime, expr, r
	case "int64", "int32", "uint32":
		return shapeInt, expr, r
	case "uint64":
		return shapeUint64, expr, r
	case "float64":
		return shapeFloat, expr, r
	case "float32":
		return shapeFloat32, expr, r
	case "bool":
		return shapeBool, expr, r
	}
	return shapeRaw, expr, r
}

func (sh shape) kind() kinds {
	switch sh {
	case shapeString, shapeTime:
		return kString
	case shapeInt, shapeUint64:
		return kInteger
	case shapeFloat, shapeFloat32:
		return kInteger | kNumber
	case shapeBool:
		return kBoolean
	case shapeStruct, shapeMap:
		return kObject
	case shapeSlice, shapeTuple:
		return kArray
	}
	return kAll
}
