package gogen

import (
	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// What null does to a schema, and the shape of a Go value as JSON: what
// the type checks reason with (the JSON types a schema admits and a Go
// type holds are the model's, gomodel.Admits and gomodel.Holds).

// The JSON type sets of the model, under the short names the checks use.
type kinds = gomodel.JSONTypes

const (
	kNull    = gomodel.JSONNull
	kBoolean = gomodel.JSONBoolean
	kInteger = gomodel.JSONInteger
	kNumber  = gomodel.JSONNumber
	kString  = gomodel.JSONString
	kArray   = gomodel.JSONArray
	kObject  = gomodel.JSONObject
	kAll     = gomodel.JSONAll
)

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

// shape is what a non-null Go value is as JSON: the model's
// [gomodel.Shape], under the short names the checks use.
type shape = gomodel.Shape

const (
	shapeString  = gomodel.ShapeString
	shapeTime    = gomodel.ShapeTime
	shapeInt     = gomodel.ShapeInt
	shapeUint64  = gomodel.ShapeUint64
	shapeFloat   = gomodel.ShapeFloat
	shapeFloat32 = gomodel.ShapeFloat32
	shapeBool    = gomodel.ShapeBool
	shapeRaw     = gomodel.ShapeRaw
	shapeStruct  = gomodel.ShapeStruct
	shapeMap     = gomodel.ShapeMap
	shapeSlice   = gomodel.ShapeSlice
	shapeTuple   = gomodel.ShapeTuple
)

// shapeOf returns the shape of a resolved type reference, the Go
// expression of its value as the checks compare it (for named scalars and
// enums, converted to the underlying type) and the type it is checked as.
func shapeOf(r *gomodel.TypeRef, expr string) (shape, string, *gomodel.TypeRef) {
	sh, base := gomodel.ShapeOf(r)
	if base != r {
		return sh, gomodel.GoString(base) + "(" + expr + ")", base
	}
	return sh, expr, base
}
