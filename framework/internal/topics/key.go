package topics

import (
	"encoding/json"
	"reflect"
	"strings"
)

// KeyReader returns how to read the key of a *T: straight from the
// struct field the key's JSON name belongs to when T is such a struct
// without a JSON method of its own, else from the encoded object.
func KeyReader[T any](field string) func(obj *T, raw []byte) (string, error) {
	fromJSON := func(_ *T, raw []byte) (string, error) { return ObjectKey(raw, field) }
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Struct || typ.Implements(jsonMarshaler) || reflect.PointerTo(typ).Implements(jsonMarshaler) {
		return fromJSON
	}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" && f.Tag.Get("json") != "-" {
			name = f.Name
		}
		if name != field || !f.IsExported() || f.Anonymous {
			continue
		}
		if f.Type.Kind() != reflect.String || strings.Contains(opts, "string") {
			return fromJSON
		}
		index := i
		return func(obj *T, _ []byte) (string, error) {
			key := reflect.ValueOf(obj).Elem().Field(index).String()
			return key, CheckKey(key)
		}
	}
	return fromJSON
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()
