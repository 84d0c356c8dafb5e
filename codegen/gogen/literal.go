package gogen

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// literal renders a JSON value as a Go expression of type r, checking that
// it fits: a default that does not is a generation error, not a surprise at
// run time.
func literal(r *gomodel.TypeRef, v *contract.Node) (string, error) {
	switch r.Kind {
	case gomodel.RefPointer:
		if v.Kind == contract.KindNull {
			return "nil", nil
		}
		inner, err := literal(r.Elem, v)
		if err != nil {
			return "", err
		}
		return "jsonwire.Ptr(" + typed(r.Elem, inner) + ")", nil
	case gomodel.RefSlice:
		if v.Kind != contract.KindArray {
			return "", fmt.Errorf("%s is not an array", v.Kind)
		}
		parts := make([]string, len(v.Items))
		for i, it := range v.Items {
			s, err := literal(r.Elem, it)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return gomodel.GoString(r) + "{" + strings.Join(parts, ", ") + "}", nil
	case gomodel.RefMap:
		if v.Kind != contract.KindObject {
			return "", fmt.Errorf("%s is not an object", v.Kind)
		}
		parts := make([]string, len(v.Keys))
		for i, k := range v.Keys {
			s, err := literal(r.Elem, v.Values[i])
			if err != nil {
				return "", err
			}
			parts[i] = strconv.Quote(k) + ": " + s
		}
		return gomodel.GoString(r) + "{" + strings.Join(parts, ", ") + "}", nil
	case gomodel.RefBuiltin:
		return builtinLiteral(r.Name, v)
	case gomodel.RefNamed:
		return namedLiteral(r.Named, v)
	}
	return "", fmt.Errorf("defaults of type %s cannot be written as Go values", gomodel.GoString(r))
}

// typed wraps untyped constants so that generic helpers infer the type.
func typed(r *gomodel.TypeRef, lit string) string {
	if r.Kind == gomodel.RefBuiltin && r.Name != "string" && r.Name != "bool" {
		return gomodel.GoString(r) + "(" + lit + ")"
	}
	return lit
}

func builtinLiteral(name string, v *contract.Node) (string, error) {
	switch name {
	case "string":
		if v.Kind != contract.KindString {
			return "", fmt.Errorf("%s is not a string", v.Kind)
		}
		return strconv.Quote(v.Text), nil
	case "bool":
		if v.Kind != contract.KindBool {
			return "", fmt.Errorf("%s is not a boolean", v.Kind)
		}
		return strconv.FormatBool(v.Bool), nil
	case "int64", "int32", "uint32", "uint64":
		if v.Kind != contract.KindNumber {
			return "", fmt.Errorf("%s is not an integer", v.Kind)
		}
		rat, ok := new(big.Rat).SetString(v.Text)
		if !ok || !rat.IsInt() {
			return "", fmt.Errorf("%s is not an integer", v.Text)
		}
		return rat.Num().String(), nil
	case "float64", "float32":
		if v.Kind != contract.KindNumber {
			return "", fmt.Errorf("%s is not a number", v.Kind)
		}
		return v.Text, nil
	case "time.Time":
		if v.Kind != contract.KindString {
			return "", fmt.Errorf("%s is not a date-time string", v.Kind)
		}
		t, err := time.Parse(time.RFC3339Nano, v.Text)
		if err != nil {
			return "", err
		}
		_, off := t.Zone()
		zone := "time.UTC"
		if off != 0 {
			zone = fmt.Sprintf("time.FixedZone(\"\", %d)", off)
		}
		return fmt.Sprintf("time.Date(%d, %d, %d, %d, %d, %d, %d, %s)", t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), zone), nil
	case "json.RawMessage":
		b, _ := v.MarshalJSON()
		return "json.RawMessage(" + strconv.Quote(string(b)) + ")", nil
	}
	return "", fmt.Errorf("defaults of type %s cannot be written as Go values", name)
}

func namedLiteral(t *gomodel.Type, v *contract.Node) (string, error) {
	switch t.Kind {
	case gomodel.KindAlias:
		return literal(t.Elem, v)
	case gomodel.KindScalar:
		s, err := literal(t.Elem, v)
		if err != nil {
			return "", err
		}
		return t.Name + "(" + s + ")", nil
	case gomodel.KindEnum:
		for _, e := range t.Enum {
			if e.Value.Equal(v) {
				return e.GoName, nil
			}
		}
		text, _ := v.MarshalJSON()
		return "", fmt.Errorf("%s is not a value of %s", text, t.Name)
	case gomodel.KindSlice:
		s, err := literal(&gomodel.TypeRef{Kind: gomodel.RefSlice, Elem: t.Elem}, v)
		if err != nil {
			return "", err
		}
		return t.Name + strings.TrimPrefix(s, "[]"+gomodel.GoString(t.Elem)), nil
	case gomodel.KindMap:
		s, err := literal(&gomodel.TypeRef{Kind: gomodel.RefMap, Elem: t.Elem, Key: t.Key}, v)
		if err != nil {
			return "", err
		}
		return t.Name + strings.TrimPrefix(s, "map["+gomodel.KeyString(t.Key)+"]"+gomodel.GoString(t.Elem)), nil
	case gomodel.KindStruct:
		if v.Kind != contract.KindObject {
			return "", fmt.Errorf("%s is not an object", v.Kind)
		}
		var parts, extra []string
		for i, k := range v.Keys {
			var field *gomodel.Field
			for _, f := range t.Fields {
				if f.JSONName == k {
					field = f
				}
			}
			if field == nil {
				if t.Extra == nil {
					return "", fmt.Errorf("%s declares no member %q", t.Name, k)
				}
				s, err := literal(t.Extra.Value, v.Values[i])
				if err != nil {
					return "", err
				}
				extra = append(extra, strconv.Quote(k)+": "+s)
				continue
			}
			s, err := fieldLiteral(field, v.Values[i])
			if err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
			parts = append(parts, field.GoName+": "+s)
		}
		if len(extra) > 0 {
			parts = append(parts, t.Extra.GoName+": map[string]"+gomodel.GoString(t.Extra.Value)+"{"+strings.Join(extra, ", ")+"}")
		}
		return t.Name + "{" + strings.Join(parts, ", ") + "}", nil
	case gomodel.KindUnion:
		// An untagged union holds the raw JSON, which is the default.
		b, err := v.MarshalJSON()
		if err != nil {
			return "", err
		}
		return t.Name + "{raw: json.RawMessage(" + strconv.Quote(string(b)) + ")}", nil
	case gomodel.KindTaggedUnion:
		if v.Kind != contract.KindObject {
			return "", fmt.Errorf("%s is not an object", v.Kind)
		}
		tag := v.Get(t.Discriminator)
		for _, vr := range t.Variants {
			if tag != nil && tag.Kind == contract.KindString && tag.Text == vr.Tag {
				s, err := literal(vr.Type, v)
				if err != nil {
					return "", err
				}
				return t.Name + "{" + vr.Name + ": jsonwire.Ptr(" + s + ")}", nil
			}
		}
		return "", fmt.Errorf("its member %q names no variant of %s", t.Discriminator, t.Name)
	}
	return "", fmt.Errorf("defaults of type %s (a %s) cannot be written as Go values", t.Name, t.Kind)
}

// dropUnfitDefaults leaves out, with a warning, the accessor of every
// default that is not a value of its member's Go type (a default the
// schema's own type or enum refuses, which JSON Schema allows: default is
// an annotation, and jsonschema/v5 ignores it).
func dropUnfitDefaults(pkg *gomodel.Package) {
	for _, t := range pkg.Types {
		for _, f := range t.Fields {
			if f.Default == nil || f.Presence == gomodel.PresenceValue {
				continue
			}
			if f.Presence == gomodel.PresenceNullable && f.Default.Kind == contract.KindNull {
				continue
			}
			if _, err := literal(f.Type, f.Default); err != nil {
				pkg.Warnings = append(pkg.Warnings, gomodel.Warning(f.Default, fmt.Sprintf("default of %s is not a value of its type (%v): no Get%s accessor", f.JSONName, err, f.GoName)))
				f.Default = nil
			}
		}
	}
}

func fieldLiteral(f *gomodel.Field, v *contract.Node) (string, error) {
	if v.Kind == contract.KindNull {
		switch {
		case f.Presence == gomodel.PresenceNullable:
			return "jsonwire.Null[" + gomodel.GoString(f.Type) + "]()", nil
		case f.Presence == gomodel.PresencePointer || f.Type.Nilable():
			return "nil", nil
		}
		return "", fmt.Errorf("null is not allowed here")
	}
	s, err := literal(f.Type, v)
	if err != nil {
		return "", err
	}
	switch f.Presence {
	case gomodel.PresencePointer:
		return "jsonwire.Ptr(" + typed(f.Type, s) + ")", nil
	case gomodel.PresenceNullable:
		return "jsonwire.Value(" + typed(f.Type, s) + ")", nil
	}
	return s, nil
}
