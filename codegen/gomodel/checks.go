package gomodel

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Keyword by keyword: which keywords of a type's schema generated checks
// evaluate on the Go value they apply to, decided by walking the schema
// over the Go type exactly as the validator renderer walks it. The walk
// records, per keyword occurrence, whether generated code checks it, on
// which Go value, and if not, why; the renderer renders exactly the
// checks decided here and fails on a keyword the model did not decide.

// KeywordCheck is the model's decision about one keyword of a schema on
// one Go value.
type KeywordCheck struct {
	// Keyword is the schema keyword, or for a decision about the whole
	// schema on the value: "x-go-type" (the value is an x-go-type),
	// "(loop)" (the schema applies itself to the same value),
	// "(union)" (a schema other than its own applies to a union) and
	// "(discriminator)" (a tagged union's variant must carry its tag).
	Keyword string `json:"keyword"`
	// Schema is where the schema holding the keyword is.
	Schema string `json:"schema"`
	// Value is the Go value the keyword applies to, as an expression from
	// the receiver m: [i] is any element of a slice, [k] any member of a
	// map, {k} any member name of it, {"name"} a declared member's name.
	Value string `json:"value"`
	// Type is the Go type of the value.
	Type string `json:"type"`
	// Checked reports that generated code checks the keyword. Trivial
	// marks a checked keyword that every value of the Go type satisfies,
	// so that no code is needed: one that does not apply to its JSON type
	// (minLength on a number), or that its decoder guarantees (format
	// date-time on time.Time), or that asserts nothing (an unknown format).
	Checked bool `json:"checked"`
	Trivial bool `json:"trivial,omitempty"`
	// Reason is why an unchecked keyword is not checked, one of the
	// Reason constants.
	Reason string `json:"reason,omitempty"`
}

// Why a keyword is not checked by generated code (KeywordCheck.Reason).
// docs/codegen.md lists them.
const (
	ReasonKeyword       = "keyword"         // generated checks do not evaluate the keyword at all (RoleOf)
	ReasonRawJSON       = "raw-json"        // the value is raw JSON: only "type" is checked on it
	ReasonExternal      = "x-go-type"       // the value is an x-go-type, decoded by its own rules
	ReasonFloat32       = "float32"         // numeric keywords and enums on a format: float value
	ReasonTime          = "time"            // string keywords other than format date-time on a time.Time
	ReasonUniqueItems   = "unique-items"    // uniqueItems over items Go's == cannot compare as JSON does
	ReasonTuple         = "tuple"           // uniqueItems and contains on a tuple
	ReasonCompound      = "compound-values" // enum or const with object or array values
	ReasonArgument      = "argument"        // the keyword's value is out of what Go can check (a count beyond int64)
	ReasonLoop          = "loop"            // the schema applies itself to the same value
	ReasonUnion         = "union"           // a schema other than its own applies to a union
	ReasonDiscriminator = "discriminator"   // a tagged union's discriminator is not a string member
	ReasonUnresolved    = "unresolved"      // a $ref the loader did not resolve
)

// The notation of KeywordCheck.Value: both walks build it with these.

// ValueDeref is the value a pointer p points to.
func ValueDeref(p string) string { return "(*" + p + ")" }

// ValueField is member or element name of struct or tuple p.
func ValueField(p, name string) string { return p + "." + name }

// ValueIndex is element i of slice p.
func ValueIndex(p string, i int) string { return p + "[" + strconv.Itoa(i) + "]" }

// ValueElems is any element of slice p.
func ValueElems(p string) string { return p + "[i]" }

// ValueEntry is the value of member name of map p.
func ValueEntry(p, name string) string { return p + "[" + strconv.Quote(name) + "]" }

// ValueEntries is the value of any member of map p.
func ValueEntries(p string) string { return p + "[k]" }

// ValueName is the name of declared member name of object p.
func ValueName(p, name string) string { return p + "{" + strconv.Quote(name) + "}" }

// ValueNames is the name of any member of map p.
func ValueNames(p string) string { return p + "{k}" }

// ValueAs is union p decoded as its variant v.
func ValueAs(p, v string) string { return p + ".As" + v + "()" }

// Keyword returns the model's decision about keyword k of schema s on the
// Go value at path value, and false when the model made none.
func (v *Validation) Keyword(s *contract.Node, k, value string) (KeywordCheck, bool) {
	if v == nil {
		return KeywordCheck{}, false
	}
	i, ok := v.index[checkKey{s, k, value}]
	if !ok {
		return KeywordCheck{}, false
	}
	return v.Keywords[i], true
}

// CallsType reports whether the checks of the type call those of c.
func (v *Validation) CallsType(c *Type) bool {
	if v == nil {
		return false
	}
	for _, t := range v.calls {
		if t == c {
			return true
		}
	}
	return false
}

type checkKey struct {
	s     *contract.Node
	k     string
	value string
}

// walkVal is a Go value the walk checks a schema on.
type walkVal struct {
	ref  *TypeRef
	path string
	// self marks the receiver, whose own schema is checked in place
	// rather than by calling its checks.
	self bool
	// tagProp and tagValue, for a variant of a tagged union, are its
	// discriminator and the value it holds there: alternatives that require
	// another value are never tried.
	tagProp, tagValue string
}

// checkWalk decides the keywords of one type's schema.
type checkWalk struct {
	t        *Type
	keywords []KeywordCheck
	index    map[checkKey]int
	reasons  []string
	calls    []*Type
	inlining map[string]bool
}

// decideKeywords walks t's schema over t and returns what it decided.
func decideKeywords(t *Type) *checkWalk {
	w := &checkWalk{t: t, index: map[checkKey]int{}, inlining: map[string]bool{}}
	w.check(t.Schema, walkVal{ref: &TypeRef{Kind: RefNamed, Named: t, Name: t.Name}, path: "m", self: true})
	return w
}

// decide records a decision; an unchecked one says why, with a message
// for the type's reasons ("" when an earlier decision said it).
func (w *checkWalk) decide(s *contract.Node, k string, x walkVal, checked bool, reason, message string) {
	key := checkKey{s, k, x.path}
	if _, ok := w.index[key]; !ok {
		w.index[key] = len(w.keywords)
		w.keywords = append(w.keywords, KeywordCheck{Keyword: k, Schema: Where(s), Value: x.path,
			Type: GoString(x.ref), Checked: checked, Reason: reason})
	}
	if message != "" {
		w.reasons = append(w.reasons, Where(s)+": "+message)
	}
}

func (w *checkWalk) checked(s *contract.Node, k string, x walkVal) {
	w.decide(s, k, x, true, "", "")
}

func (w *checkWalk) trivial(s *contract.Node, k string, x walkVal) {
	w.decide(s, k, x, true, "", "")
	w.keywords[w.index[checkKey{s, k, x.path}]].Trivial = true
}

func (w *checkWalk) unchecked(s *contract.Node, k string, x walkVal, reason, format string, args ...any) {
	w.decide(s, k, x, false, reason, fmt.Sprintf(format, args...))
}

// check walks schema s on value x.
func (w *checkWalk) check(s *contract.Node, x walkVal) {
	if s.Kind == contract.KindBool {
		return
	}
	r := x.ref.Resolve()
	if r.Kind == RefNamed && r.Named.Kind != KindAlias && r.Named.StandsFor(s) && !x.self {
		w.call(r.Named)
		return
	}
	key := fmt.Sprintf("%p|%s", s, x.path)
	if w.inlining[key] {
		w.unchecked(s, "(loop)", x, ReasonLoop, "the schema applies itself to the same value (an infinite loop)")
		return
	}
	w.inlining[key] = true
	defer delete(w.inlining, key)
	switch {
	case r.Kind == RefPointer:
		w.check(s, walkVal{ref: r.Elem, path: ValueDeref(x.path)})
		return
	case IsSlice(r) || IsMap(r):
		w.value(s, x)
		return
	case r.Kind == RefExternal:
		w.unchecked(s, "x-go-type", x, ReasonExternal, "x-go-type %s decodes with its own rules, which need not match the schema", GoString(r))
		return
	case r.Kind == RefNamed && (r.Named.Kind == KindTaggedUnion || r.Named.Kind == KindUnion) && !x.self && OnlyRef(s):
		w.checked(s, "$ref", x)
		w.check(s.Ref, x)
		return
	case r.Kind == RefNamed && r.Named.Kind == KindTaggedUnion:
		w.tagged(s, x)
		return
	case r.Kind == RefNamed && r.Named.Kind == KindUnion:
		if !x.self {
			w.unchecked(s, "(union)", x, ReasonUnion, "a schema other than its own applies to the union %s", r.Named.Name)
			return
		}
		w.union(s, x)
		return
	}
	w.value(s, x)
}

func (w *checkWalk) call(t *Type) {
	for _, c := range w.calls {
		if c == t {
			return
		}
	}
	w.calls = append(w.calls, t)
}

// The keywords evaluated together on an object, an array, and by contains.
var (
	objectChecks = []string{"properties", "patternProperties", "additionalProperties", "required", "propertyNames",
		"minProperties", "maxProperties", "dependentRequired", "dependentSchemas"}
	arrayChecks    = []string{"prefixItems", "items", "minItems", "maxItems", "uniqueItems"}
	containsChecks = []string{"contains", "minContains", "maxContains"}
)

// Family names the family of keywords evaluated together that k belongs
// to: "object", "array", "contains", or "" for a keyword evaluated alone.
// The checks of a family read each member's decision.
func Family(k string) string {
	switch {
	case inGroup(objectChecks, k):
		return "object"
	case inGroup(arrayChecks, k):
		return "array"
	case inGroup(containsChecks, k):
		return "contains"
	}
	return ""
}

func inGroup(group []string, k string) bool {
	for _, g := range group {
		if g == k {
			return true
		}
	}
	return false
}

// group decides every keyword of s in group alike.
func (w *checkWalk) group(s *contract.Node, group []string, x walkVal, decide func(k string)) {
	for _, k := range s.Keys {
		if inGroup(group, k) {
			decide(k)
		}
	}
}

// value walks the keywords of s on a non-null value.
func (w *checkWalk) value(s *contract.Node, x walkVal) {
	r := x.ref.Resolve()
	sh, base := ShapeOf(r)
	objectDone, arrayDone, containsDone := false, false, false
	for i, k := range s.Keys {
		kv := s.Values[i]
		switch RoleOf(k) {
		case KeywordIgnored:
			continue
		case KeywordUnchecked:
			w.unchecked(s, k, x, ReasonKeyword, "%s", UncheckedReason(k))
			continue
		}
		switch {
		case k == "$ref":
			if s.Ref == nil {
				w.unchecked(s, k, x, ReasonUnresolved, "$ref is not resolved")
				continue
			}
			w.checked(s, k, x)
			w.check(s.Ref, x)
		case k == "type":
			w.checked(s, k, x)
		case k == "enum" || k == "const":
			vals := []*contract.Node{kv}
			if k == "enum" {
				vals = kv.Items
			}
			w.enum(s, k, vals, sh, base, x)
		case k == "format" || k == "minLength" || k == "maxLength" || k == "pattern":
			w.stringKeyword(s, k, kv, sh, x)
		case k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum" || k == "multipleOf":
			w.numberKeyword(s, k, kv, sh, base, x)
		case inGroup(objectChecks, k):
			if objectDone {
				continue
			}
			objectDone = true
			switch sh {
			case ShapeStruct, ShapeMap:
				w.object(s, x)
			default:
				w.inapplicable(s, "object", objectChecks, sh, x)
			}
		case inGroup(arrayChecks, k):
			if arrayDone {
				continue
			}
			arrayDone = true
			switch sh {
			case ShapeSlice:
				w.slice(s, x)
			case ShapeTuple:
				w.tuple(s, x)
			default:
				w.inapplicable(s, "array", arrayChecks, sh, x)
			}
		case inGroup(containsChecks, k):
			if containsDone {
				continue
			}
			containsDone = true
			w.contains(s, x, sh)
		case k == "allOf":
			w.checked(s, k, x)
			for _, part := range kv.Items {
				w.check(part, x)
			}
		case k == "anyOf" || k == "oneOf":
			w.checked(s, k, x)
			for _, br := range kv.Items {
				if x.tagProp != "" {
					if tag, ok := BranchTag(br, x.tagProp); ok && tag != x.tagValue {
						continue
					}
				}
				w.check(br, x)
			}
		case k == "not":
			w.checked(s, k, x)
			w.check(kv, x)
		case k == "if":
			w.checked(s, k, x)
			w.check(kv, x)
			if then := s.Get("then"); then != nil {
				w.check(then, x)
			}
			if els := s.Get("else"); els != nil {
				w.check(els, x)
			}
		case k == "then" || k == "else":
			// evaluated with "if"; without it they do nothing
			if s.Get("if") != nil {
				w.checked(s, k, x)
			} else {
				w.trivial(s, k, x)
			}
		}
	}
}

// inapplicable decides a family of keywords on a value of another JSON
// type, which they do not constrain, or on raw JSON, where generated code
// does not check them.
func (w *checkWalk) inapplicable(s *contract.Node, family string, group []string, sh Shape, x walkVal) {
	if sh != ShapeRaw {
		w.group(s, group, x, func(k string) { w.trivial(s, k, x) })
		return
	}
	w.group(s, group, x, func(k string) { w.decide(s, k, x, false, ReasonRawJSON, "") })
	w.reasons = append(w.reasons, Where(s)+": "+family+" keywords on raw JSON are not checked by generated code")
}

// unhandled is the reason a keyword cannot be checked on a value of shape
// sh: float32, time.Time, or raw JSON (every shape without checks of its
// own: unions, x-go-types and raw values).
func unhandled(sh Shape) string {
	switch sh {
	case ShapeFloat32:
		return ReasonFloat32
	case ShapeTime:
		return ReasonTime
	}
	return ReasonRawJSON
}

// enum decides "enum" or "const" on a value.
func (w *checkWalk) enum(s *contract.Node, k string, vals []*contract.Node, sh Shape, base *TypeRef, x walkVal) {
	switch sh {
	case ShapeString, ShapeInt, ShapeUint64, ShapeFloat, ShapeBool:
		w.checked(s, k, x)
	case ShapeStruct, ShapeMap, ShapeSlice, ShapeTuple:
		for _, v := range vals {
			if v.Kind == contract.KindObject || v.Kind == contract.KindArray {
				w.unchecked(s, k, x, ReasonCompound, "%s with object or array values is not checked by generated code", k)
				return
			}
		}
		w.checked(s, k, x) // no value of the keyword is of the value's JSON type
	default:
		w.unchecked(s, k, x, unhandled(sh), "%s on %s is not checked by generated code", k, GoString(base))
	}
}

// stringKeyword decides format, minLength, maxLength or pattern.
func (w *checkWalk) stringKeyword(s *contract.Node, k string, kv *contract.Node, sh Shape, x walkVal) {
	switch sh {
	case ShapeString:
	case ShapeTime:
		if k == "format" && (kv.Text == "date-time" || !KnownFormat(kv.Text)) {
			w.trivial(s, k, x) // the decoder accepts nothing else, or the format asserts nothing
			return
		}
		w.unchecked(s, k, x, ReasonTime, "%s on a date-time held as time.Time is not checked by generated code", k)
		return
	case ShapeRaw:
		if k == "format" && !KnownFormat(kv.Text) {
			w.trivial(s, k, x)
			return
		}
		w.unchecked(s, k, x, ReasonRawJSON, "%s on raw JSON is not checked by generated code", k)
		return
	default:
		w.trivial(s, k, x) // the keyword does not apply to this type
		return
	}
	switch k {
	case "format":
		if !KnownFormat(kv.Text) {
			w.trivial(s, k, x)
			return
		}
	case "minLength", "maxLength":
		if _, ok := Count(kv); !ok {
			w.unchecked(s, k, x, ReasonArgument, "%s %s is not a length", k, kv.Text)
			return
		}
	case "pattern":
		if _, err := jsonwire.CompilePattern(kv.Text); err != nil {
			w.unchecked(s, k, x, ReasonArgument, "pattern %q does not compile: %v", kv.Text, err)
			return
		}
	}
	w.checked(s, k, x)
}

// numberKeyword decides a numeric keyword.
func (w *checkWalk) numberKeyword(s *contract.Node, k string, kv *contract.Node, sh Shape, base *TypeRef, x walkVal) {
	switch sh {
	case ShapeInt, ShapeUint64, ShapeFloat:
	case ShapeFloat32, ShapeRaw:
		w.unchecked(s, k, x, unhandled(sh), "%s on %s is not checked by generated code", k, GoString(base))
		return
	default:
		w.trivial(s, k, x)
		return
	}
	if kv.Kind != contract.KindNumber {
		w.unchecked(s, k, x, ReasonArgument, "%s is not a number", k)
		return
	}
	bound, ok := new(big.Rat).SetString(kv.Text)
	if !ok {
		w.unchecked(s, k, x, ReasonArgument, "%s %s is not a number", k, kv.Text)
		return
	}
	if k == "multipleOf" && bound.Sign() <= 0 {
		w.unchecked(s, k, x, ReasonArgument, "multipleOf %s is not positive", kv.Text)
		return
	}
	w.checked(s, k, x)
}

// tagged walks s on whichever variant of a tagged union is set.
func (w *checkWalk) tagged(s *contract.Node, x walkVal) {
	t := x.ref.Resolve().Named
	for _, v := range t.Variants {
		y := walkVal{ref: v.Type, path: ValueDeref(ValueField(x.path, v.Name)), tagProp: t.Discriminator, tagValue: v.Tag}
		vt := v.Type.Resolve().Named
		for _, f := range vt.Fields {
			if f.JSONName != t.Discriminator {
				continue
			}
			sh, _ := ShapeOf(f.Type.Resolve())
			if sh != ShapeString || f.Presence != PresenceValue && f.Presence != PresencePointer {
				w.unchecked(s, "(discriminator)", y, ReasonDiscriminator, "the discriminator %s of %s is not a string member", t.Discriminator, vt.Name)
				break
			}
			w.checked(s, "(discriminator)", y)
		}
		w.check(s, y)
	}
}

// union walks a union's own schema on each variant it may decode as.
func (w *checkWalk) union(s *contract.Node, x walkVal) {
	t := x.ref.Resolve().Named
	for _, v := range t.Variants {
		w.check(s, walkVal{ref: v.Type, path: ValueAs(x.path, v.Name)})
	}
}

// fieldValue walks s on a struct member or tuple element.
func (w *checkWalk) fieldValue(s *contract.Node, path string, f *Field) {
	switch f.Presence {
	case PresenceValue:
		w.check(s, walkVal{ref: f.Type, path: path})
	case PresencePointer:
		if f.Required {
			w.check(s, walkVal{ref: &TypeRef{Kind: RefPointer, Elem: f.Type}, path: path})
			return
		}
		w.check(s, walkVal{ref: f.Type, path: ValueDeref(path)})
	case PresenceOmitZero:
		w.value(s, walkVal{ref: f.Type, path: path})
	case PresenceNullable:
		w.check(s, walkVal{ref: f.Type, path: path})
	}
}

// objectParts are the declared members of an object value and its map of
// other members, if any.
type objectParts struct {
	path      string
	fields    []*Field
	extra     string // path of the map of other members, "" when closed
	extraType *TypeRef
}

// objectPartsOf describes the object value at path: the struct's fields and
// the map of its other members (a map value itself, or a struct's Extra).
func objectPartsOf(x walkVal) objectParts {
	r := x.ref.Resolve()
	if r.Kind == RefMap {
		return objectParts{path: x.path, extra: x.path, extraType: r.Elem}
	}
	t := r.Named
	if t.Kind == KindMap {
		return objectParts{path: x.path, extra: x.path, extraType: t.Elem}
	}
	o := objectParts{path: x.path, fields: t.Fields}
	if t.Extra != nil {
		o.extra, o.extraType = ValueField(x.path, t.Extra.GoName), t.Extra.Value
	}
	return o
}

func (o objectParts) field(name string) *Field {
	for _, f := range o.fields {
		if f.JSONName == name {
			return f
		}
	}
	return nil
}

// object walks the object keywords of s on a struct or map.
func (w *checkWalk) object(s *contract.Node, x walkVal) {
	o := objectPartsOf(x)
	props, pats, addl := s.Get("properties"), s.Get("patternProperties"), s.Get("additionalProperties")
	var patterns []*jsonwire.Pattern
	if pats != nil {
		for _, pat := range pats.Keys {
			re, err := jsonwire.CompilePattern(pat)
			if err != nil {
				w.group(s, objectChecks, x, func(k string) { w.decide(s, k, x, false, ReasonArgument, "") })
				w.reasons = append(w.reasons, fmt.Sprintf("%s: patternProperties %q does not compile: %v", Where(s), pat, err))
				return
			}
			patterns = append(patterns, re)
		}
	}
	if props != nil {
		w.checked(s, "properties", x)
		for i, name := range props.Keys {
			if f := o.field(name); f != nil {
				w.fieldValue(props.Values[i], ValueField(x.path, f.GoName), f)
			} else if o.extra != "" {
				w.check(props.Values[i], walkVal{ref: o.extraType, path: ValueEntry(o.extra, name)})
			}
		}
	}
	if pats != nil {
		w.checked(s, "patternProperties", x)
		for i := range pats.Keys {
			ps := pats.Values[i]
			for _, f := range o.fields {
				if patterns[i].MatchString(f.JSONName) {
					w.fieldValue(ps, ValueField(x.path, f.GoName), f)
				}
			}
			if o.extra != "" && !IsTrue(ps) {
				w.check(ps, walkVal{ref: o.extraType, path: ValueEntries(o.extra)})
			}
		}
	}
	if addl != nil {
		w.checked(s, "additionalProperties", x)
	}
	if addl != nil && !IsTrue(addl) && !IsFalse(addl) {
		for _, f := range o.fields {
			if props.Get(f.JSONName) != nil || matchesAny(patterns, f.JSONName) {
				continue
			}
			w.fieldValue(addl, ValueField(x.path, f.GoName), f)
		}
		if o.extra != "" {
			w.check(addl, walkVal{ref: o.extraType, path: ValueEntries(o.extra)})
		}
	}
	if names := s.Get("propertyNames"); names != nil {
		w.checked(s, "propertyNames", x)
		if !IsTrue(names) {
			str := &TypeRef{Kind: RefBuiltin, Name: "string"}
			for _, f := range o.fields {
				w.check(names, walkVal{ref: str, path: ValueName(x.path, f.JSONName)})
			}
			if o.extra != "" {
				w.check(names, walkVal{ref: str, path: ValueNames(o.extra)})
			}
		}
	}
	if s.Get("required") != nil {
		w.checked(s, "required", x)
	}
	for _, k := range []string{"minProperties", "maxProperties"} {
		if kv := s.Get(k); kv != nil {
			if _, ok := Count(kv); ok {
				w.checked(s, k, x)
			} else {
				w.unchecked(s, k, x, ReasonArgument, "%s %s is not a count", k, kv.Text)
			}
		}
	}
	if s.Get("dependentRequired") != nil {
		w.checked(s, "dependentRequired", x)
	}
	if ds := s.Get("dependentSchemas"); ds != nil {
		w.checked(s, "dependentSchemas", x)
		for i, name := range ds.Keys {
			if o.field(name) == nil && o.extra == "" {
				continue // never present
			}
			w.check(ds.Values[i], x)
		}
	}
}

func matchesAny(res []*jsonwire.Pattern, name string) bool {
	for _, re := range res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// counts decides minItems and maxItems.
func (w *checkWalk) counts(s *contract.Node, x walkVal) {
	for _, k := range []string{"minItems", "maxItems"} {
		kv := s.Get(k)
		if kv == nil {
			continue
		}
		if _, ok := Count(kv); !ok {
			w.unchecked(s, k, x, ReasonArgument, "%s %s is not a count", k, kv.Text)
			continue
		}
		w.checked(s, k, x)
	}
}

// slice walks the array keywords of s on a slice.
func (w *checkWalk) slice(s *contract.Node, x walkVal) {
	elem := SliceElem(x.ref)
	prefix, items := s.Get("prefixItems"), s.Get("items")
	if prefix != nil {
		w.checked(s, "prefixItems", x)
		for i, ps := range prefix.Items {
			w.check(ps, walkVal{ref: elem, path: ValueIndex(x.path, i)})
		}
	}
	if items != nil {
		w.checked(s, "items", x)
		if !IsTrue(items) {
			w.check(items, walkVal{ref: elem, path: ValueElems(x.path)})
		}
	}
	w.counts(s, x)
	if u := s.Get("uniqueItems"); u != nil {
		if u.Kind != contract.KindBool || !u.Bool {
			w.trivial(s, "uniqueItems", x)
			return
		}
		re := elem.Resolve()
		if re.Kind == RefPointer {
			re = re.Elem.Resolve()
		}
		if sh, _ := ShapeOf(re); !sh.Scalar() {
			w.unchecked(s, "uniqueItems", x, ReasonUniqueItems, "uniqueItems on items of type %s is not checked by generated code", GoString(elem))
			return
		}
		w.checked(s, "uniqueItems", x)
	}
}

// tuple walks the array keywords of s on a tuple.
func (w *checkWalk) tuple(s *contract.Node, x walkVal) {
	t := x.ref.Resolve().Named
	prefix, items := s.Get("prefixItems"), s.Get("items")
	var prefixes []*contract.Node
	if prefix != nil {
		prefixes = prefix.Items
		w.checked(s, "prefixItems", x)
	}
	if items != nil {
		w.checked(s, "items", x)
	}
	for i, f := range t.Fields {
		switch {
		case i < len(prefixes):
			w.fieldValue(prefixes[i], ValueField(x.path, f.GoName), f)
		case items != nil && !IsTrue(items):
			w.fieldValue(items, ValueField(x.path, f.GoName), f)
		}
	}
	rest := ValueField(x.path, "Rest")
	if len(prefixes) > len(t.Fields) && t.Rest != nil {
		for i := len(t.Fields); i < len(prefixes); i++ {
			w.check(prefixes[i], walkVal{ref: t.Rest, path: ValueIndex(rest, i-len(t.Fields))})
		}
	}
	if items != nil && !IsTrue(items) && t.Rest != nil {
		w.check(items, walkVal{ref: t.Rest, path: ValueElems(rest)})
	}
	w.counts(s, x)
	if u := s.Get("uniqueItems"); u != nil {
		if u.Kind == contract.KindBool && u.Bool {
			w.unchecked(s, "uniqueItems", x, ReasonTuple, "uniqueItems on a tuple is not checked by generated code")
		} else {
			w.trivial(s, "uniqueItems", x)
		}
	}
}

// contains walks contains, minContains and maxContains.
func (w *checkWalk) contains(s *contract.Node, x walkVal, sh Shape) {
	cs := s.Get("contains")
	if cs == nil {
		w.group(s, containsChecks, x, func(k string) { w.trivial(s, k, x) }) // nothing to count
		return
	}
	switch sh {
	case ShapeSlice:
	case ShapeRaw, ShapeTuple:
		reason := ReasonRawJSON
		if sh == ShapeTuple {
			reason = ReasonTuple
		}
		w.group(s, containsChecks, x, func(k string) { w.decide(s, k, x, false, reason, "") })
		w.reasons = append(w.reasons, fmt.Sprintf("%s: contains on %s is not checked by generated code", Where(s), GoString(x.ref)))
		return
	default:
		w.group(s, containsChecks, x, func(k string) { w.trivial(s, k, x) })
		return
	}
	for _, k := range []string{"minContains", "maxContains"} {
		if m := s.Get(k); m != nil {
			if _, ok := Count(m); !ok {
				w.group(s, containsChecks, x, func(k string) { w.decide(s, k, x, false, ReasonArgument, "") })
				w.reasons = append(w.reasons, fmt.Sprintf("%s: %s %s is not a count", Where(s), k, m.Text))
				return
			}
		}
	}
	w.group(s, containsChecks, x, func(k string) { w.checked(s, k, x) })
	w.check(cs, walkVal{ref: SliceElem(x.ref), path: ValueElems(x.path)})
}
