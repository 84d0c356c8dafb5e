package gogen

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Generated validators check a decoded message against everything its
// schema says, keyword by keyword, on the Go value the generated decoder
// built. A type gets an unexported validateJSON method when every keyword
// its schema applies can be checked on its Go value (and every type it
// calls is covered in turn); a message type whose whole schema is covered
// gets an exported Validate, which the runtime calls instead of validating
// the JSON with jsonschema/v5. Anything not covered (see [Coverage]) leaves
// the message without Validate, so the runtime validates it with
// jsonschema/v5 as before: a message is validated one way or the other,
// never half.

type node = contract.Node

// validators holds, for one package, the generated validation code and
// what is covered.
type validators struct {
	pkg *gomodel.Package
	// bodies is the body of each type's validateJSON method.
	bodies map[*gomodel.Type]string
	// reasons says why a type is not covered, directly.
	reasons map[*gomodel.Type][]string
	// calls are the types whose validateJSON a type's body calls.
	calls map[*gomodel.Type]map[*gomodel.Type]bool
	// covered is the result: the type and everything it calls is covered.
	covered map[*gomodel.Type]bool
	// emit are the covered types reachable from covered messages: those
	// that get a validateJSON method.
	emit map[*gomodel.Type]bool
	// roots maps a message's root type to the message names it serves.
	roots map[*gomodel.Type][]string

	patterns  []string // regular expressions, by var index
	patternIx map[string]int
	rats      []string // numbers for multipleOf on floats, by var index
	ratIx     map[string]int
}

// Coverage says, for each message of a package, whether it got a generated
// Validate and, when not, why: the keywords or types its schema uses that
// generated checks do not cover.
func Coverage(pkg *gomodel.Package) map[string][]string {
	vs := buildValidators(pkg)
	out := map[string][]string{}
	for _, m := range pkg.Contract.Messages {
		t := rootType(pkg.Messages[m.Name])
		if t != nil && vs.covered[t] {
			out[m.Name] = nil
			continue
		}
		out[m.Name] = vs.whyNot(t)
	}
	return out
}

// rootType is the named type of this package a message decodes into, or
// nil when the message is an alias of a builtin or external type.
func rootType(t *gomodel.Type) *gomodel.Type {
	for i := 0; t != nil && t.Kind == gomodel.KindAlias && i < 64; i++ {
		r := t.Elem.Resolve()
		if r.Kind != gomodel.RefNamed {
			return nil
		}
		t = r.Named
	}
	return t
}

// whyNot lists why t is not covered: its own reasons, or those of a type
// it calls.
func (vs *validators) whyNot(t *gomodel.Type) []string {
	if t == nil {
		return []string{"the message is raw JSON or an x-go-type"}
	}
	seen := map[*gomodel.Type]bool{}
	var out []string
	var walk func(t *gomodel.Type)
	walk = func(t *gomodel.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		out = append(out, vs.reasons[t]...)
		for _, c := range sortedTypes(vs.calls[t]) {
			walk(c)
		}
	}
	walk(t)
	return out
}

func sortedTypes(m map[*gomodel.Type]bool) []*gomodel.Type {
	out := make([]*gomodel.Type, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func buildValidators(pkg *gomodel.Package) *validators {
	vs := &validators{
		pkg: pkg, bodies: map[*gomodel.Type]string{}, reasons: map[*gomodel.Type][]string{},
		calls: map[*gomodel.Type]map[*gomodel.Type]bool{}, covered: map[*gomodel.Type]bool{},
		emit: map[*gomodel.Type]bool{}, roots: map[*gomodel.Type][]string{},
		patternIx: map[string]int{}, ratIx: map[string]int{},
	}
	for _, t := range pkg.Types {
		if t.Kind == gomodel.KindAlias {
			continue
		}
		vc := &vctx{vs: vs, t: t, c: &code{}, calls: map[*gomodel.Type]bool{}, inlining: map[string]bool{}}
		vc.body()
		vc.positions()
		vs.bodies[t] = vc.c.b.String()
		vs.reasons[t] = vc.reasons
		vs.calls[t] = vc.calls
	}
	// A type is covered when it and everything it calls has no reason not
	// to be.
	for t := range vs.bodies {
		vs.covered[t] = len(vs.reasons[t]) == 0
	}
	for changed := true; changed; {
		changed = false
		for t, calls := range vs.calls {
			if !vs.covered[t] {
				continue
			}
			for c := range calls {
				if !vs.covered[c] {
					vs.covered[t] = false
					changed = true
					break
				}
			}
		}
	}
	for _, m := range pkg.Contract.Messages {
		t := rootType(pkg.Messages[m.Name])
		if t == nil {
			continue
		}
		if r := vs.rootReason(m, t); r != "" {
			vs.reasons[t] = append(vs.reasons[t], r)
			vs.covered[t] = false
		}
		vs.roots[t] = append(vs.roots[t], m.Name)
	}
	var mark func(t *gomodel.Type)
	mark = func(t *gomodel.Type) {
		if vs.emit[t] {
			return
		}
		vs.emit[t] = true
		for c := range vs.calls[t] {
			mark(c)
		}
	}
	for t := range vs.roots {
		if vs.covered[t] {
			mark(t)
		}
	}
	return vs
}

// rootReason checks that a message's root type decodes every value its
// schema admits.
func (vs *validators) rootReason(m *contract.Message, t *gomodel.Type) string {
	admitted := admits(m.Schema, 0)
	held := holds(&gomodel.TypeRef{Kind: gomodel.RefNamed, Named: t, Name: t.Name})
	if extra := admitted &^ held; extra != 0 {
		return fmt.Sprintf("%s: the schema admits %s, which %s cannot hold", where(m.Schema), extra, t.Name)
	}
	return ""
}

func where(n *node) string {
	if w := n.Where(); w != "" {
		if s := n.Source(); s != nil && s.Pointer != "" {
			return w + " (" + s.Pointer + ")"
		}
		return w
	}
	return "#" + n.Pointer
}

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

// vctx generates the validateJSON body of one type.
type vctx struct {
	vs       *validators
	t        *gomodel.Type
	c        *code
	reasons  []string
	calls    map[*gomodel.Type]bool
	inlining map[string]bool
}

func (vc *vctx) uncovered(s *node, format string, args ...any) {
	vc.reasons = append(vc.reasons, where(s)+": "+fmt.Sprintf(format, args...))
}

// val is a Go value being checked: an addressable expression and its type.
type val struct {
	expr string
	ref  *gomodel.TypeRef
	// self marks the receiver of the method being generated, whose own
	// schema is checked inline rather than by calling the method.
	self bool
	// tagProp and tagValue, for a variant of a tagged union, are its
	// discriminator and the value it holds there: alternatives that require
	// another value fail without being tried.
	tagProp, tagValue string
}

// pos is where a check reports: the instance location and the keyword
// location, each a *jsonwire.Path expression with escaped steps still to
// append, and the validation that records.
type pos struct {
	at, atSteps string
	kw, kwSteps string
	v           string
	quiet       bool
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "/" + b
}

func esc(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (p pos) keyword(steps string) pos { p.kwSteps = join(p.kwSteps, steps); return p }

func (p pos) member(name string) pos { p.atSteps = join(p.atSteps, esc(name)); return p }

// fail emits the recording of a violation; message is a Go expression,
// left out of quiet validations, which only count.
func (vc *vctx) fail(p pos, keyword, message string) {
	if p.quiet {
		message = `""`
	}
	vc.c.line("%s.Fail(%s, %q, %s, %q, %s)", recv(p.v), p.at, p.atSteps, p.kw, join(p.kwSteps, keyword), message)
}

// recv turns a pointer expression "&x" into "x" for calling a method on
// it (x is addressable, so Go takes the address itself).
func recv(expr string) string { return strings.TrimPrefix(expr, "&") }

// materialize turns a path with pending steps into a *jsonwire.Path
// expression.
func (vc *vctx) materialize(expr, steps string) string {
	if steps == "" {
		return expr
	}
	n := vc.c.fresh("path")
	vc.c.line("%s := %s.Keyword(%q)", n, recv(expr), steps)
	return "&" + n
}

// below emits checks at a dynamic step below p: member key (a Go string
// expression) or, with index, element key (a Go int expression). The
// path is only built if the checks use it. It returns the statements.
func (vc *vctx) below(p pos, key string, index bool, emit func(p pos)) string {
	n := vc.c.fresh("at")
	var decl string
	stmts := vc.c.capture(func() {
		decl = vc.c.capture(func() {
			at := vc.materialize(p.at, p.atSteps)
			method := "Member"
			if index {
				method = "Index"
			}
			vc.c.line("%s := %s.%s(%s)", n, recv(at), method, key)
		})
		q := p
		q.at, q.atSteps = "&"+n, ""
		emit(q)
	})
	if uses(stmts, n) {
		return decl + stmts
	}
	return stmts
}

// nonNil emits checks of a value that may be nil (JSON null): the null
// checks when it is, the others when not, leaving out what is empty.
func (vc *vctx) nonNil(expr string, ifNull, ifValue func()) {
	n := vc.c.capture(ifNull)
	v := vc.c.capture(ifValue)
	switch {
	case n != "" && v != "":
		vc.c.line("if %s == nil {", expr)
		vc.c.raw(n)
		vc.c.line("} else {")
		vc.c.raw(v)
		vc.c.line("}")
	case n != "":
		vc.c.line("if %s == nil {", expr)
		vc.c.raw(n)
		vc.c.line("}")
	case v != "":
		vc.c.line("if %s != nil {", expr)
		vc.c.raw(v)
		vc.c.line("}")
	}
}

// block emits "head { stmts }" when the statements are not empty.
func (vc *vctx) block(head string, emit func()) {
	stmts := vc.c.capture(emit)
	if stmts == "" {
		return
	}
	vc.c.line("%s {", head)
	vc.c.raw(stmts)
	vc.c.line("}")
}

// rangeOver emits a loop over a map or slice whose body the checks fill,
// naming only the loop variables the body uses.
func (vc *vctx) rangeOver(key, elem, over string, emit func()) {
	stmts := vc.c.capture(emit)
	if stmts == "" {
		return
	}
	k, e := key, elem
	if !uses(stmts, e) {
		e = "_"
	}
	if !uses(stmts, k) {
		k = "_"
	}
	switch {
	case k == "_" && e == "_":
		vc.c.line("for range %s {", over)
	case e == "_":
		vc.c.line("for %s := range %s {", k, over)
	default:
		vc.c.line("for %s, %s := range %s {", k, e, over)
	}
	vc.c.raw(stmts)
	vc.c.line("}")
}

// body generates the type's validateJSON body: its own schema checked on
// the receiver.
func (vc *vctx) body() {
	t := vc.t
	self := val{expr: "m", ref: &gomodel.TypeRef{Kind: gomodel.RefNamed, Named: t, Name: t.Name}, self: true}
	switch t.Kind {
	case gomodel.KindStruct, gomodel.KindTuple, gomodel.KindTaggedUnion:
		self.expr = "m"
	default:
		self.expr = "(*m)"
	}
	p := pos{at: "at", kw: "kw", v: "v"}
	vc.check(t.Schema, self, p)
}

// check emits the checks of schema s on value x.
func (vc *vctx) check(s *node, x val, p pos) {
	if s.Kind == contract.KindBool {
		if !s.Bool {
			vc.fail(p, "", `"not allowed"`)
		}
		return
	}
	r := x.ref.Resolve()
	if r.Kind == gomodel.RefNamed && r.Named.Kind != gomodel.KindAlias && r.Named.Schema == s && !x.self {
		vc.call(r.Named, x, p)
		return
	}
	key := fmt.Sprintf("%p|%s", s, x.expr)
	if vc.inlining[key] {
		vc.uncovered(s, "the schema applies itself to the same value (an infinite loop)")
		return
	}
	vc.inlining[key] = true
	defer delete(vc.inlining, key)
	switch {
	case r.Kind == gomodel.RefPointer:
		vc.nonNil(x.expr, func() { vc.null(s, p) }, func() {
			vc.check(s, val{expr: "(*" + x.expr + ")", ref: r.Elem}, p)
		})
		return
	case r.Kind == gomodel.RefSlice || r.Kind == gomodel.RefMap ||
		r.Kind == gomodel.RefNamed && (r.Named.Kind == gomodel.KindSlice || r.Named.Kind == gomodel.KindMap):
		vc.nonNil(x.expr, func() { vc.null(s, p) }, func() { vc.value(s, x, p) })
		return
	case r.Kind == gomodel.RefExternal:
		vc.uncovered(s, "x-go-type %s decodes with its own rules, which need not match the schema", gomodel.GoString(r))
		return
	case r.Kind == gomodel.RefNamed && (r.Named.Kind == gomodel.KindTaggedUnion || r.Named.Kind == gomodel.KindUnion) &&
		!x.self && onlyRef(s):
		// a reference to the union's schema, with annotations beside it
		vc.check(s.Ref, x, p.keyword("$ref"))
		return
	case r.Kind == gomodel.RefNamed && r.Named.Kind == gomodel.KindTaggedUnion:
		vc.tagged(s, x, p)
		return
	case r.Kind == gomodel.RefNamed && r.Named.Kind == gomodel.KindUnion:
		if !x.self {
			vc.uncovered(s, "a schema other than its own applies to the union %s", r.Named.Name)
			return
		}
		vc.union(s, x, p)
		return
	}
	vc.value(s, x, p)
}

// call emits a call of another type's validateJSON.
func (vc *vctx) call(t *gomodel.Type, x val, p pos) {
	vc.calls[t] = true
	if p.quiet {
		vc.c.line("%s.validateJSON(%s, %s, %s)", x.expr, p.v, p.at, p.kw)
		// Paths of a quiet validation are never read.
		return
	}
	at := vc.materialize(p.at, p.atSteps)
	kw := vc.materialize(p.kw, p.kwSteps)
	vc.c.line("%s.validateJSON(%s, %s, %s)", x.expr, p.v, at, kw)
}

// null emits the checks of s on JSON null, which are decided now.
func (vc *vctx) null(s *node, p pos) {
	if !acceptsNull(s, 0) {
		vc.fail(p, "type", `"null is not allowed here"`)
	}
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

// Keywords generated checks ignore: annotations, and content keywords,
// which the runtime does not assert.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "$comment": true, "$defs": true, "definitions": true,
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$vocabulary": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
}

// handled are the keywords generated checks evaluate; keywords neither
// handled nor known to jsonschema/v5 are ignored, as it ignores them.
var handled = map[string]bool{
	"$ref": true, "type": true, "enum": true, "const": true, "format": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "required": true,
	"propertyNames": true, "minProperties": true, "maxProperties": true, "dependentRequired": true, "dependentSchemas": true,
	"prefixItems": true, "items": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"contains": true, "minContains": true, "maxContains": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
}

// unsupported are validation keywords of 2020-12 that generated checks do
// not evaluate: a schema using them leaves its message to jsonschema/v5.
var unsupported = map[string]bool{
	"unevaluatedProperties": true, "unevaluatedItems": true, "$dynamicRef": true, "$recursiveRef": true,
	"dependencies": true, "additionalItems": true,
}

// value emits the checks of s on a non-null value.
func (vc *vctx) value(s *node, x val, p pos) {
	r := x.ref.Resolve()
	sh, sv, base := shapeOf(r, x.expr)
	objectDone, arrayDone, containsDone := false, false, false
	for i, k := range s.Keys {
		kv := s.Values[i]
		switch {
		case annotations[k] || strings.HasPrefix(k, "x-"):
			continue
		case unsupported[k]:
			vc.uncovered(s, "%s is not checked by generated code", k)
			continue
		case !handled[k]:
			continue
		}
		switch k {
		case "$ref":
			if s.Ref == nil {
				vc.uncovered(s, "$ref is not resolved")
				continue
			}
			vc.check(s.Ref, x, p.keyword("$ref"))
		case "type":
			vc.typeCheck(kv, sh, sv, p)
		case "enum", "const":
			vals := []*node{kv}
			if k == "enum" {
				vals = kv.Items
			}
			vc.enum(s, k, vals, sh, sv, base, p)
		case "format", "minLength", "maxLength", "pattern":
			vc.stringCheck(s, k, kv, sh, sv, p)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			vc.numberCheck(s, k, kv, sh, sv, base, p)
		case "properties", "patternProperties", "additionalProperties", "required", "propertyNames",
			"minProperties", "maxProperties", "dependentRequired", "dependentSchemas":
			if objectDone {
				continue
			}
			objectDone = true
			switch sh {
			case shapeStruct, shapeMap:
				vc.object(s, x, p)
			case shapeRaw:
				vc.uncovered(s, "object keywords on raw JSON are not checked by generated code")
			}
		case "prefixItems", "items", "minItems", "maxItems", "uniqueItems":
			if arrayDone {
				continue
			}
			arrayDone = true
			switch sh {
			case shapeSlice:
				vc.slice(s, x, p)
			case shapeTuple:
				vc.tuple(s, x, p)
			case shapeRaw:
				vc.uncovered(s, "array keywords on raw JSON are not checked by generated code")
			}
		case "contains", "minContains", "maxContains":
			if containsDone {
				continue
			}
			containsDone = true
			vc.contains(s, x, sh, p)
		case "allOf":
			for j, part := range kv.Items {
				vc.check(part, x, p.keyword("allOf/"+strconv.Itoa(j)))
			}
		case "anyOf", "oneOf":
			vc.alternatives(k, kv.Items, x, p)
		case "not":
			q := vc.c.fresh("q")
			vc.c.line("%s := %s.Quiet()", q, recv(p.v))
			qp := p.keyword("not")
			qp.v, qp.quiet = "&"+q, true
			vc.check(kv, x, qp)
			vc.c.line("if %s.OK() {", q)
			vc.fail(p, "not", `"not failed"`)
			vc.c.line("}")
		case "if":
			q := vc.c.fresh("q")
			vc.c.line("%s := %s.Quiet()", q, recv(p.v))
			qp := p.keyword("if")
			qp.v, qp.quiet = "&"+q, true
			vc.check(kv, x, qp)
			then, els := s.Get("then"), s.Get("else")
			if then != nil {
				vc.c.line("if %s.OK() {", q)
				vc.check(then, x, p.keyword("then"))
				vc.c.line("}")
			}
			if els != nil {
				vc.c.line("if !%s.OK() {", q)
				vc.check(els, x, p.keyword("else"))
				vc.c.line("}")
			}
		case "then", "else":
			// evaluated with "if"; without it they do nothing
		}
	}
}

// typeCheck emits the check of "type".
func (vc *vctx) typeCheck(t *node, sh shape, sv string, p pos) {
	var names []string
	var allowed kinds
	if t.Kind == contract.KindString {
		names = []string{t.Text}
	}
	for _, it := range t.Items {
		names = append(names, it.Text)
	}
	for _, n := range names {
		allowed |= kindOfType(n)
	}
	want := strings.Join(names, " or ")
	if sh == shapeRaw {
		var cases []string
		for _, c := range []struct {
			k    kinds
			name string
		}{{kNull, "KindNull"}, {kBoolean, "KindBoolean"}, {kInteger, "KindInteger"}, {kNumber, "KindNumber"},
			{kString, "KindString"}, {kArray, "KindArray"}, {kObject, "KindObject"}} {
			if allowed&c.k != 0 {
				cases = append(cases, "jsonwire."+c.name)
			}
		}
		k := vc.c.fresh("kind")
		vc.c.line("switch %s := jsonwire.KindOf(%s); %s {", k, sv, k)
		if len(cases) > 0 {
			vc.c.line("case %s:", strings.Join(cases, ", "))
		}
		vc.c.line("default:")
		vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got "+%s.String()`, want, k))
		vc.c.line("}")
		return
	}
	have := sh.kind()
	switch {
	case have&^allowed == 0:
	case sh == shapeFloat || sh == shapeFloat32:
		if allowed&kInteger != 0 {
			vc.c.line("if !jsonwire.IsIntegral(float64(%s)) {", sv)
			vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got number"`, want))
			vc.c.line("}")
			return
		}
		vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got number"`, want))
	default:
		vc.fail(p, "type", fmt.Sprintf(`"expected %s, but got %s"`, want, have))
	}
}

// enum emits the check of "enum" or "const" on a scalar.
func (vc *vctx) enum(s *node, keyword string, vals []*node, sh shape, sv string, base *gomodel.TypeRef, p pos) {
	var conds []string
	var shown []string
	for _, v := range vals {
		b, _ := v.MarshalJSON()
		shown = append(shown, string(b))
	}
	message := strconv.Quote("value must be one of " + strings.Join(shown, ", "))
	if keyword == "const" {
		message = strconv.Quote("value must be " + strings.Join(shown, ", "))
	}
	switch sh {
	case shapeString:
		for _, v := range vals {
			if v.Kind == contract.KindString {
				conds = append(conds, sv+" != "+strconv.Quote(v.Text))
			}
		}
	case shapeInt, shapeUint64:
		for _, v := range vals {
			if v.Kind != contract.KindNumber {
				continue
			}
			r, ok := new(big.Rat).SetString(v.Text)
			if !ok || !r.IsInt() || !fits(r.Num(), sh) {
				continue
			}
			conds = append(conds, intExpr(sv, sh)+" != "+r.Num().String())
		}
	case shapeFloat:
		for _, v := range vals {
			if v.Kind == contract.KindNumber {
				conds = append(conds, sv+" != "+floatLit(v.Text))
			}
		}
	case shapeBool:
		for _, v := range vals {
			if v.Kind == contract.KindBool {
				conds = append(conds, sv+" != "+strconv.FormatBool(v.Bool))
			}
		}
	case shapeStruct, shapeMap, shapeSlice, shapeTuple:
		for _, v := range vals {
			if v.Kind == contract.KindObject || v.Kind == contract.KindArray {
				vc.uncovered(s, "%s with object or array values is not checked by generated code", keyword)
				return
			}
		}
	default:
		vc.uncovered(s, "%s on %s is not checked by generated code", keyword, gomodel.GoString(base))
		return
	}
	if len(conds) == 0 {
		vc.fail(p, keyword, message)
		return
	}
	vc.c.line("if %s {", strings.Join(conds, " && "))
	vc.fail(p, keyword, message)
	vc.c.line("}")
}

// fits reports whether an integer fits the Go domain of a shape.
func fits(n *big.Int, sh shape) bool {
	if sh == shapeUint64 {
		return n.Sign() >= 0 && n.IsUint64()
	}
	return n.IsInt64()
}

func intExpr(sv string, sh shape) string {
	if sh == shapeUint64 {
		return sv
	}
	return "int64(" + sv + ")"
}

// floatLit renders a JSON number as a Go float64 literal.
func floatLit(text string) string {
	f, _ := strconv.ParseFloat(text, 64)
	switch {
	case math.IsInf(f, 1):
		return "math.Inf(1)"
	case math.IsInf(f, -1):
		return "math.Inf(-1)"
	}
	lit := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(lit, ".e") {
		lit += ".0"
	}
	return "float64(" + lit + ")"
}

// knownFormats are the formats jsonschema/v5 asserts.
func knownFormat(name string) bool {
	_, ok := jsonschema.Formats[name]
	return ok
}

// stringCheck emits a string keyword.
func (vc *vctx) stringCheck(s *node, k string, kv *node, sh shape, sv string, p pos) {
	switch sh {
	case shapeString:
	case shapeTime:
		if k == "format" && kv.Text == "date-time" {
			return // the decoder accepts nothing else
		}
		if k == "format" && !knownFormat(kv.Text) {
			return
		}
		vc.uncovered(s, "%s on a date-time held as time.Time is not checked by generated code", k)
		return
	case shapeRaw:
		if k == "format" && !knownFormat(kv.Text) {
			return
		}
		vc.uncovered(s, "%s on raw JSON is not checked by generated code", k)
		return
	default:
		return // the keyword does not apply to this type
	}
	switch k {
	case "format":
		if !knownFormat(kv.Text) {
			return
		}
		vc.c.line("if !jsonwire.IsFormat(%q, %s) {", kv.Text, sv)
		vc.fail(p, "format", "jsonwire.Quote("+sv+")+"+strconv.Quote(" is not valid "+strconv.Quote(kv.Text)))
		vc.c.line("}")
	case "minLength", "maxLength":
		n, ok := nonNegative(kv)
		if !ok {
			vc.uncovered(s, "%s %s is not a length", k, kv.Text)
			return
		}
		op, word := "<", ">="
		if k == "maxLength" {
			op, word = ">", "<="
		}
		vc.c.line("if n := jsonwire.Length(%s); n %s %d {", sv, op, n)
		vc.fail(p, k, fmt.Sprintf(`"length must be %s %d, but got "+strconv.Itoa(n)`, word, n))
		vc.c.line("}")
	case "pattern":
		if _, err := regexp.Compile(kv.Text); err != nil {
			vc.uncovered(s, "pattern %q does not compile: %v", kv.Text, err)
			return
		}
		re := vc.vs.pattern(kv.Text)
		vc.c.line("if !%s.MatchString(%s) {", re, sv)
		vc.fail(p, "pattern", strconv.Quote("does not match pattern "+strconv.Quote(kv.Text)))
		vc.c.line("}")
	}
}

func nonNegative(n *node) (int64, bool) {
	if n.Kind != contract.KindNumber {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(n.Text)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// pattern returns the package-level variable holding a compiled pattern.
func (vs *validators) pattern(p string) string {
	i, ok := vs.patternIx[p]
	if !ok {
		i = len(vs.patterns)
		vs.patternIx[p] = i
		vs.patterns = append(vs.patterns, p)
	}
	return "pattern" + strconv.Itoa(i)
}

// rat returns the package-level variable holding a number as a big.Rat.
func (vs *validators) rat(text string) string {
	i, ok := vs.ratIx[text]
	if !ok {
		i = len(vs.rats)
		vs.ratIx[text] = i
		vs.rats = append(vs.rats, text)
	}
	return "number" + strconv.Itoa(i)
}

// numberCheck emits a numeric keyword.
func (vc *vctx) numberCheck(s *node, k string, kv *node, sh shape, sv string, base *gomodel.TypeRef, p pos) {
	switch sh {
	case shapeInt, shapeUint64, shapeFloat:
	case shapeFloat32, shapeRaw:
		vc.uncovered(s, "%s on %s is not checked by generated code", k, gomodel.GoString(base))
		return
	default:
		return
	}
	if kv.Kind != contract.KindNumber {
		vc.uncovered(s, "%s is not a number", k)
		return
	}
	bound, ok := new(big.Rat).SetString(kv.Text)
	if !ok {
		vc.uncovered(s, "%s %s is not a number", k, kv.Text)
		return
	}
	shown := kv.Text
	if sh == shapeFloat {
		vc.floatCheck(s, k, kv.Text, bound, sv, shown, p)
		return
	}
	iv := intExpr(sv, sh)
	show := fmt.Sprintf(`"must be %%s %s but found "+%s`, shown, formatInt(iv, sh))
	if k == "multipleOf" {
		if bound.Sign() <= 0 {
			vc.uncovered(s, "multipleOf %s is not positive", kv.Text)
			return
		}
		a := new(big.Int).Set(bound.Num())
		msg := fmt.Sprintf(`%s+" not multipleOf %s"`, formatInt(iv, sh), shown)
		if !fits(a, sh) {
			vc.c.line("if %s != 0 {", iv)
		} else {
			vc.c.line("if %s %% %s != 0 {", iv, a.String())
		}
		vc.fail(p, k, msg)
		vc.c.line("}")
		return
	}
	// The integer the value must not pass, and on which side.
	var limit *big.Int
	lower := k == "minimum" || k == "exclusiveMinimum"
	floor := new(big.Int).Div(bound.Num(), bound.Denom()) // rounds toward -inf for positive denominators
	ceil := new(big.Int).Set(floor)
	if !bound.IsInt() {
		ceil.Add(ceil, big.NewInt(1))
	}
	word := ""
	switch k {
	case "minimum":
		limit, word = ceil, ">="
	case "exclusiveMinimum":
		limit, word = new(big.Int).Add(floor, big.NewInt(1)), ">"
	case "maximum":
		limit, word = floor, "<="
	case "exclusiveMaximum":
		limit, word = new(big.Int).Sub(ceil, big.NewInt(1)), "<"
	}
	msg := fmt.Sprintf(show, word)
	lo, hi := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	if sh == shapeUint64 {
		lo, hi = big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64)
	}
	switch {
	case lower && limit.Cmp(lo) <= 0, !lower && limit.Cmp(hi) >= 0:
		// every value of the Go type passes
	case lower && limit.Cmp(hi) > 0, !lower && limit.Cmp(lo) < 0:
		vc.fail(p, k, msg)
	case lower:
		vc.c.line("if %s < %s {", iv, limit.String())
		vc.fail(p, k, msg)
		vc.c.line("}")
	default:
		vc.c.line("if %s > %s {", iv, limit.String())
		vc.fail(p, k, msg)
		vc.c.line("}")
	}
}

func formatInt(iv string, sh shape) string {
	if sh == shapeUint64 {
		return "strconv.FormatUint(" + iv + ", 10)"
	}
	return "strconv.FormatInt(" + iv + ", 10)"
}

// floatCheck emits a numeric keyword on a float64. Comparisons are of
// float64 values, exact for numbers of up to 15 significant digits.
func (vc *vctx) floatCheck(s *node, k, text string, bound *big.Rat, sv, shown string, p pos) {
	found := `strconv.FormatFloat(` + sv + `, 'g', -1, 64)`
	if k == "multipleOf" {
		if bound.Sign() <= 0 {
			vc.uncovered(s, "multipleOf %s is not positive", text)
			return
		}
		vc.c.line("if !jsonwire.MultipleOfFloat(%s, %s) {", sv, vc.vs.rat(text))
		vc.fail(p, k, fmt.Sprintf(`%s+" not multipleOf %s"`, found, shown))
		vc.c.line("}")
		return
	}
	ops := map[string][2]string{
		"minimum": {"<", ">="}, "exclusiveMinimum": {"<=", ">"}, "maximum": {">", "<="}, "exclusiveMaximum": {">=", "<"},
	}[k]
	op, word := ops[0], ops[1]
	vc.c.line("if %s %s %s {", sv, op, floatLit(text))
	vc.fail(p, k, fmt.Sprintf(`"must be %s %s but found "+%s`, word, shown, found))
	vc.c.line("}")
}

// objectOf describes the object value x: its declared fields, and the map
// of other members (a map value itself, or a struct's Extra) if any.
type objectOf struct {
	x      val
	fields []*gomodel.Field
	// extra is the Go expression of the map of other members, "" when the
	// struct is closed; extraType is its value type.
	extra     string
	extraType *gomodel.TypeRef
}

func describeObject(x val) objectOf {
	r := x.ref.Resolve()
	if r.Kind == gomodel.RefMap {
		return objectOf{x: x, extra: x.expr, extraType: r.Elem}
	}
	t := r.Named
	if t.Kind == gomodel.KindMap {
		return objectOf{x: x, extra: x.expr, extraType: t.Elem}
	}
	o := objectOf{x: x, fields: t.Fields}
	if t.Extra != nil {
		o.extra, o.extraType = x.expr+"."+t.Extra.GoName, t.Extra.Value
	}
	return o
}

func (o objectOf) field(name string) *gomodel.Field {
	for _, f := range o.fields {
		if f.JSONName == name {
			return f
		}
	}
	return nil
}

// present returns a Go condition true when member name is present ("true"
// or "false" when that is known now).
func (o objectOf) present(name string) string {
	if f := o.field(name); f != nil {
		return fieldPresent(o.x.expr+"."+f.GoName, f)
	}
	if o.extra == "" {
		return "false"
	}
	return fmt.Sprintf("jsonwire.Has(%s, %q)", o.extra, name)
}

// fieldPresent is the condition under which a struct member or tuple
// element is present.
func fieldPresent(expr string, f *gomodel.Field) string {
	if f.Required {
		return "true"
	}
	switch f.Presence {
	case gomodel.PresenceNullable:
		return "!" + expr + ".IsZero()"
	case gomodel.PresenceValue:
		return "true"
	}
	return expr + " != nil"
}

// fieldValue emits the checks of s on a present struct member or tuple
// element: absent members are skipped, null ones checked as null.
func (vc *vctx) fieldValue(s *node, expr string, f *gomodel.Field, p pos) {
	switch f.Presence {
	case gomodel.PresenceValue:
		vc.check(s, val{expr: expr, ref: f.Type}, p)
	case gomodel.PresencePointer:
		if f.Required {
			vc.check(s, val{expr: expr, ref: &gomodel.TypeRef{Kind: gomodel.RefPointer, Elem: f.Type}}, p)
			return
		}
		vc.block("if "+expr+" != nil", func() { vc.check(s, val{expr: "(*" + expr + ")", ref: f.Type}, p) })
	case gomodel.PresenceOmitZero:
		vc.block("if "+expr+" != nil", func() { vc.value(s, val{expr: expr, ref: f.Type}, p) })
	case gomodel.PresenceNullable:
		x := vc.c.fresh("x")
		n := vc.c.capture(func() { vc.null(s, p) })
		v := vc.c.capture(func() { vc.check(s, val{expr: x, ref: f.Type}, p) })
		get := fmt.Sprintf("if %s, ok := %s.Get(); ok {", x, expr)
		if !uses(v, x) {
			get = "if " + expr + ".IsValue() {"
		}
		switch {
		case n != "" && v != "":
			vc.c.line("if %s.IsNull() {", expr)
			vc.c.raw(n)
			vc.c.line("} else %s", get)
			vc.c.raw(v)
			vc.c.line("}")
		case n != "":
			vc.c.line("if %s.IsNull() {", expr)
			vc.c.raw(n)
			vc.c.line("}")
		case v != "":
			vc.c.line("%s", get)
			vc.c.raw(v)
			vc.c.line("}")
		}
	}
}

// memberValue emits the checks of s on member name of an object, if
// present.
func (vc *vctx) memberValue(o objectOf, name string, s *node, p pos) {
	if f := o.field(name); f != nil {
		vc.fieldValue(s, o.x.expr+"."+f.GoName, f, p)
		return
	}
	if o.extra == "" {
		return
	}
	x := vc.c.fresh("x")
	stmts := vc.c.capture(func() { vc.check(s, val{expr: x, ref: o.extraType}, p) })
	if stmts == "" {
		return
	}
	if uses(stmts, x) {
		vc.c.line("if %s, ok := %s[%q]; ok {", x, o.extra, name)
	} else {
		vc.c.line("if jsonwire.Has(%s, %q) {", o.extra, name)
	}
	vc.c.raw(stmts)
	vc.c.line("}")
}

// object emits the object keywords of s on a struct or map.
func (vc *vctx) object(s *node, x val, p pos) {
	o := describeObject(x)
	props := s.Get("properties")
	pats := s.Get("patternProperties")
	addl := s.Get("additionalProperties")
	inProps := func(name string) bool { return props != nil && props.Get(name) != nil }
	var patterns []*regexp.Regexp
	if pats != nil {
		for _, pat := range pats.Keys {
			re, err := regexp.Compile(pat)
			if err != nil {
				vc.uncovered(s, "patternProperties %q does not compile: %v", pat, err)
				return
			}
			patterns = append(patterns, re)
		}
	}
	if props != nil {
		for i, name := range props.Keys {
			vc.memberValue(o, name, props.Values[i], p.keyword("properties/"+esc(name)).member(name))
		}
	}
	if pats != nil {
		for i, pat := range pats.Keys {
			ps := pats.Values[i]
			pp := p.keyword("patternProperties/" + esc(pat))
			for _, f := range o.fields {
				if patterns[i].MatchString(f.JSONName) {
					vc.fieldValue(ps, o.x.expr+"."+f.GoName, f, pp.member(f.JSONName))
				}
			}
			if o.extra != "" && !isTrue(ps) {
				k, e := vc.c.fresh("k"), vc.c.fresh("e")
				vc.rangeOver(k, e, o.extra, func() {
					vc.block("if "+vc.vs.pattern(pat)+".MatchString("+k+")", func() {
						vc.c.raw(vc.below(pp, k, false, func(q pos) { vc.check(ps, val{expr: e, ref: o.extraType}, q) }))
					})
				})
			}
		}
	}
	if addl != nil && !isTrue(addl) {
		ap := p.keyword("additionalProperties")
		for _, f := range o.fields {
			if inProps(f.JSONName) || matchesAny(patterns, f.JSONName) {
				continue
			}
			fp := ap.member(f.JSONName)
			if isFalse(addl) {
				cond := fieldPresent(o.x.expr+"."+f.GoName, f)
				if cond != "true" {
					vc.c.line("if %s {", cond)
				}
				vc.fail(fp, "", strconv.Quote(fmt.Sprintf("additionalProperties %q not allowed", f.JSONName)))
				if cond != "true" {
					vc.c.line("}")
				}
				continue
			}
			vc.fieldValue(addl, o.x.expr+"."+f.GoName, f, fp)
		}
		if o.extra != "" {
			k, e := vc.c.fresh("k"), vc.c.fresh("e")
			checks := vc.c.capture(func() {
				vc.c.raw(vc.below(ap, k, false, func(mp pos) {
					if isFalse(addl) {
						vc.fail(mp, "", `"additionalProperties "+jsonwire.Quote(`+k+`)+" not allowed"`)
						return
					}
					vc.check(addl, val{expr: e, ref: o.extraType}, mp)
				}))
			})
			if checks != "" {
				vc.rangeOver(k, e, o.extra, func() {
					if props != nil && len(props.Keys) > 0 {
						var quoted []string
						for _, n := range props.Keys {
							quoted = append(quoted, strconv.Quote(n))
						}
						vc.c.line("switch %s {", k)
						vc.c.line("case %s:", strings.Join(quoted, ", "))
						vc.c.line("continue")
						vc.c.line("}")
					}
					for _, pat := range patternKeys(pats) {
						vc.c.line("if %s.MatchString(%s) {", vc.vs.pattern(pat), k)
						vc.c.line("continue")
						vc.c.line("}")
					}
					vc.c.raw(checks)
				})
			}
		}
	}
	if names := s.Get("propertyNames"); names != nil && !isTrue(names) {
		np := p.keyword("propertyNames")
		str := &gomodel.TypeRef{Kind: gomodel.RefBuiltin, Name: "string"}
		for _, f := range o.fields {
			cond := fieldPresent(o.x.expr+"."+f.GoName, f)
			vc.block("if "+cond, func() {
				vc.check(names, val{expr: strconv.Quote(f.JSONName), ref: str}, np.member(f.JSONName))
			})
		}
		if o.extra != "" {
			k := vc.c.fresh("k")
			vc.rangeOver(k, "_", o.extra, func() {
				vc.c.raw(vc.below(np, k, false, func(q pos) { vc.check(names, val{expr: k, ref: str}, q) }))
			})
		}
	}
	if req := s.Get("required"); req != nil && len(req.Items) > 0 {
		var checks []string
		for _, it := range req.Items {
			cond := o.present(it.Text)
			if cond == "true" {
				continue
			}
			checks = append(checks, cond, it.Text)
		}
		if len(checks) > 0 {
			vc.c.line("{")
			vc.c.line("var missing []string")
			for i := 0; i < len(checks); i += 2 {
				if checks[i] == "false" {
					vc.c.line("missing = append(missing, %q)", checks[i+1])
					continue
				}
				vc.c.line("if %s {", not(checks[i]))
				vc.c.line("missing = append(missing, %q)", checks[i+1])
				vc.c.line("}")
			}
			vc.c.line("if len(missing) > 0 {")
			vc.fail(p, "required", "jsonwire.MissingMessage(missing)")
			vc.c.line("}")
			vc.c.line("}")
		}
	}
	minP, hasMin := s.Get("minProperties"), s.Get("minProperties") != nil
	maxP, hasMax := s.Get("maxProperties"), s.Get("maxProperties") != nil
	if hasMin || hasMax {
		n := vc.c.fresh("count")
		vc.c.line("%s := 0", n)
		for _, f := range o.fields {
			cond := fieldPresent(o.x.expr+"."+f.GoName, f)
			if cond == "true" {
				vc.c.line("%s++", n)
				continue
			}
			vc.c.line("if %s {", cond)
			vc.c.line("%s++", n)
			vc.c.line("}")
		}
		if o.extra != "" {
			vc.c.line("%s += len(%s)", n, o.extra)
		}
		if hasMin {
			if lim, ok := nonNegative(minP); ok {
				vc.c.line("if %s < %d {", n, lim)
				vc.fail(p, "minProperties", fmt.Sprintf(`"minimum %d properties allowed, but found "+strconv.Itoa(%s)+" properties"`, lim, n))
				vc.c.line("}")
			} else {
				vc.uncovered(s, "minProperties %s is not a count", minP.Text)
			}
		}
		if hasMax {
			if lim, ok := nonNegative(maxP); ok {
				vc.c.line("if %s > %d {", n, lim)
				vc.fail(p, "maxProperties", fmt.Sprintf(`"maximum %d properties allowed, but found "+strconv.Itoa(%s)+" properties"`, lim, n))
				vc.c.line("}")
			} else {
				vc.uncovered(s, "maxProperties %s is not a count", maxP.Text)
			}
		}
	}
	if dr := s.Get("dependentRequired"); dr != nil {
		for i, name := range dr.Keys {
			cond := o.present(name)
			if cond == "false" {
				continue
			}
			vc.c.line("if %s {", cond)
			for j, it := range dr.Values[i].Items {
				need := o.present(it.Text)
				if need == "true" {
					continue
				}
				vc.c.line("if %s {", not(need))
				vc.fail(p, "dependentRequired/"+esc(name)+"/"+strconv.Itoa(j),
					strconv.Quote(fmt.Sprintf("property %q is required, if %q property exists", it.Text, name)))
				vc.c.line("}")
			}
			vc.c.line("}")
		}
	}
	if ds := s.Get("dependentSchemas"); ds != nil {
		for i, name := range ds.Keys {
			cond := o.present(name)
			if cond == "false" {
				continue
			}
			vc.c.line("if %s {", cond)
			vc.check(ds.Values[i], x, p.keyword("dependentSchemas/"+esc(name)))
			vc.c.line("}")
		}
	}
}

// not negates a generated condition.
func not(cond string) string {
	if strings.HasPrefix(cond, "!") && !strings.ContainsAny(cond, " &|") {
		return cond[1:]
	}
	if !strings.ContainsAny(cond, " &|!") {
		return "!" + cond
	}
	return "!(" + cond + ")"
}

func patternKeys(pats *node) []string {
	if pats == nil {
		return nil
	}
	return pats.Keys
}

func matchesAny(res []*regexp.Regexp, name string) bool {
	for _, re := range res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func isTrue(s *node) bool {
	if s.Kind == contract.KindBool {
		return s.Bool
	}
	if s.Kind != contract.KindObject {
		return false
	}
	for _, k := range s.Keys {
		if !annotations[k] && !strings.HasPrefix(k, "x-") && (handled[k] || unsupported[k]) {
			return false
		}
	}
	return true
}

func isFalse(s *node) bool { return s.Kind == contract.KindBool && !s.Bool }

// slice emits the array keywords of s on a slice.
func (vc *vctx) slice(s *node, x val, p pos) {
	elem := sliceElem(x.ref)
	prefix := s.Get("prefixItems")
	items := s.Get("items")
	start := 0
	if prefix != nil {
		start = len(prefix.Items)
		for i, ps := range prefix.Items {
			vc.block(fmt.Sprintf("if len(%s) > %d", x.expr, i), func() {
				vc.check(ps, val{expr: fmt.Sprintf("%s[%d]", x.expr, i), ref: elem}, p.keyword("prefixItems/"+strconv.Itoa(i)).member(strconv.Itoa(i)))
			})
		}
	}
	if items != nil && !isTrue(items) {
		i := vc.c.fresh("i")
		vc.block(fmt.Sprintf("for %s := %d; %s < len(%s); %s++", i, start, i, x.expr, i), func() {
			vc.c.raw(vc.below(p.keyword("items"), i, true, func(q pos) {
				vc.check(items, val{expr: x.expr + "[" + i + "]", ref: elem}, q)
			}))
		})
	}
	vc.itemCounts(s, "len("+x.expr+")", p)
	if u := s.Get("uniqueItems"); u != nil && u.Kind == contract.KindBool && u.Bool {
		re := elem.Resolve()
		helper := "Duplicate"
		if re.Kind == gomodel.RefPointer {
			helper, re = "DuplicatePointer", re.Elem.Resolve()
		}
		sh, _, _ := shapeOf(re, "")
		switch sh {
		case shapeString, shapeInt, shapeUint64, shapeFloat, shapeBool:
		default:
			vc.uncovered(s, "uniqueItems on items of type %s is not checked by generated code", gomodel.GoString(elem))
			return
		}
		if p.quiet {
			vc.c.line("if _, _, dup := jsonwire.%s(%s); dup {", helper, x.expr)
		} else {
			vc.c.line("if i, j, dup := jsonwire.%s(%s); dup {", helper, x.expr)
		}
		vc.fail(p, "uniqueItems", `"items at index "+strconv.Itoa(i)+" and "+strconv.Itoa(j)+" are equal"`)
		vc.c.line("}")
	}
}

func sliceElem(r *gomodel.TypeRef) *gomodel.TypeRef {
	r = r.Resolve()
	if r.Kind == gomodel.RefSlice {
		return r.Elem
	}
	return r.Named.Elem
}

// itemCounts emits minItems and maxItems on an array of n elements.
func (vc *vctx) itemCounts(s *node, n string, p pos) {
	for _, k := range []string{"minItems", "maxItems"} {
		kv := s.Get(k)
		if kv == nil {
			continue
		}
		lim, ok := nonNegative(kv)
		if !ok {
			vc.uncovered(s, "%s %s is not a count", k, kv.Text)
			continue
		}
		op, word := "<", "minimum"
		if k == "maxItems" {
			op, word = ">", "maximum"
		}
		vc.c.line("if %s %s %d {", n, op, lim)
		vc.fail(p, k, fmt.Sprintf(`"%s %d items required, but found "+strconv.Itoa(%s)+" items"`, word, lim, n))
		vc.c.line("}")
	}
}

// tuple emits the array keywords of s on a tuple.
func (vc *vctx) tuple(s *node, x val, p pos) {
	t := x.ref.Resolve().Named
	prefix := s.Get("prefixItems")
	items := s.Get("items")
	var prefixes []*node
	if prefix != nil {
		prefixes = prefix.Items
	}
	// element i is field i, or Rest[i-len(fields)]
	for i, f := range t.Fields {
		expr := x.expr + "." + f.GoName
		ep := p.member(strconv.Itoa(i))
		switch {
		case i < len(prefixes):
			vc.fieldValue(prefixes[i], expr, f, ep.keyword("prefixItems/"+strconv.Itoa(i)))
		case items != nil && !isTrue(items):
			vc.fieldValue(items, expr, f, ep.keyword("items"))
		}
	}
	if len(prefixes) > len(t.Fields) && t.Rest != nil {
		for i := len(t.Fields); i < len(prefixes); i++ {
			j := i - len(t.Fields)
			vc.block(fmt.Sprintf("if len(%s.Rest) > %d", x.expr, j), func() {
				vc.check(prefixes[i], val{expr: fmt.Sprintf("%s.Rest[%d]", x.expr, j), ref: t.Rest}, p.keyword("prefixItems/"+strconv.Itoa(i)).member(strconv.Itoa(i)))
			})
		}
	}
	if items != nil && !isTrue(items) && t.Rest != nil {
		start := len(prefixes) - len(t.Fields)
		if start < 0 {
			start = 0
		}
		i := vc.c.fresh("i")
		vc.block(fmt.Sprintf("for %s := %d; %s < len(%s.Rest); %s++", i, start, i, x.expr, i), func() {
			vc.c.raw(vc.below(p.keyword("items"), fmt.Sprintf("%d+%s", len(t.Fields), i), true, func(q pos) {
				vc.check(items, val{expr: x.expr + ".Rest[" + i + "]", ref: t.Rest}, q)
			}))
		})
	}
	if s.Get("minItems") != nil || s.Get("maxItems") != nil {
		n := vc.c.fresh("count")
		if t.Rest != nil {
			vc.c.line("%s := len(%s.Rest)", n, x.expr)
		} else {
			vc.c.line("%s := 0", n)
		}
		for _, f := range t.Fields {
			cond := fieldPresent(x.expr+"."+f.GoName, f)
			if cond == "true" {
				vc.c.line("%s++", n)
				continue
			}
			vc.c.line("if %s {", cond)
			vc.c.line("%s++", n)
			vc.c.line("}")
		}
		vc.itemCounts(s, n, p)
	}
	if u := s.Get("uniqueItems"); u != nil && u.Kind == contract.KindBool && u.Bool {
		vc.uncovered(s, "uniqueItems on a tuple is not checked by generated code")
	}
}

// contains emits contains, minContains and maxContains.
func (vc *vctx) contains(s *node, x val, sh shape, p pos) {
	cs := s.Get("contains")
	if cs == nil {
		return
	}
	switch sh {
	case shapeSlice:
	case shapeRaw, shapeTuple:
		vc.uncovered(s, "contains on %s is not checked by generated code", gomodel.GoString(x.ref))
		return
	default:
		return
	}
	minC, maxC := int64(1), int64(-1)
	if m := s.Get("minContains"); m != nil {
		n, ok := nonNegative(m)
		if !ok {
			vc.uncovered(s, "minContains %s is not a count", m.Text)
			return
		}
		minC = n
	}
	if m := s.Get("maxContains"); m != nil {
		n, ok := nonNegative(m)
		if !ok {
			vc.uncovered(s, "maxContains %s is not a count", m.Text)
			return
		}
		maxC = n
	}
	elem := sliceElem(x.ref)
	n, i, q := vc.c.fresh("matched"), vc.c.fresh("i"), vc.c.fresh("q")
	qp := p.keyword("contains")
	qp.v, qp.quiet = "&"+q, true
	inner := vc.c.capture(func() { vc.check(cs, val{expr: x.expr + "[" + i + "]", ref: elem}, qp) })
	if inner == "" {
		vc.c.line("%s := len(%s)", n, x.expr)
	} else {
		vc.c.line("%s := 0", n)
		vc.c.line("for %s := range %s {", i, x.expr)
		vc.c.line("%s := %s.Quiet()", q, recv(p.v))
		vc.c.raw(inner)
		vc.c.line("if %s.OK() {", q)
		vc.c.line("%s++", n)
		vc.c.line("}")
		vc.c.line("}")
	}
	vc.c.line("if %s < %d {", n, minC)
	vc.fail(p, "minContains", fmt.Sprintf(`"valid must be >= %d, but got "+strconv.Itoa(%s)`, minC, n))
	vc.c.line("}")
	if maxC >= 0 {
		vc.c.line("if %s > %d {", n, maxC)
		vc.fail(p, "maxContains", fmt.Sprintf(`"valid must be <= %d, but got "+strconv.Itoa(%s)`, maxC, n))
		vc.c.line("}")
	}
}

// alternatives emits anyOf or oneOf: each branch tried quietly.
func (vc *vctx) alternatives(k string, branches []*node, x val, p pos) {
	n := vc.c.fresh("matched")
	vc.c.line("%s := 0", n)
	for i, br := range branches {
		if x.tagProp != "" {
			if tag, ok := branchTag(br, x.tagProp); ok && tag != x.tagValue {
				continue
			}
		}
		guard := ""
		switch {
		case k == "anyOf" && i > 0:
			guard = n + " == 0"
		case k == "oneOf" && i > 1:
			guard = n + " < 2"
		}
		if guard != "" {
			vc.c.line("if %s {", guard)
		}
		q := vc.c.fresh("q")
		vc.c.line("%s := %s.Quiet()", q, recv(p.v))
		qp := p.keyword(k + "/" + strconv.Itoa(i))
		qp.v, qp.quiet = "&"+q, true
		vc.check(br, x, qp)
		vc.c.line("if %s.OK() {", q)
		vc.c.line("%s++", n)
		vc.c.line("}")
		if guard != "" {
			vc.c.line("}")
		}
	}
	if k == "anyOf" {
		vc.c.line("if %s == 0 {", n)
		vc.fail(p, k, `"anyOf failed"`)
	} else {
		vc.c.line("if %s != 1 {", n)
		vc.fail(p, k, `"oneOf failed: "+strconv.Itoa(`+n+`)+" alternatives match"`)
	}
	vc.c.line("}")
}

// tagged emits the checks of s on a tagged union: on whichever variant is
// set.
func (vc *vctx) tagged(s *node, x val, p pos) {
	t := x.ref.Resolve().Named
	vc.c.line("switch {")
	for _, v := range t.Variants {
		vc.c.line("case %s.%s != nil:", x.expr, v.Name)
		y := val{expr: "(*" + x.expr + "." + v.Name + ")", ref: v.Type, tagProp: t.Discriminator, tagValue: v.Tag}
		// A variant must carry its own tag, or it would encode as another.
		vt := v.Type.Resolve().Named
		for _, f := range vt.Fields {
			if f.JSONName != t.Discriminator {
				continue
			}
			expr := y.expr + "." + f.GoName
			if f.Presence == gomodel.PresencePointer {
				expr = "*" + expr
			}
			sh, sv, _ := shapeOf(f.Type.Resolve(), expr)
			if sh != shapeString || f.Presence != gomodel.PresenceValue && f.Presence != gomodel.PresencePointer {
				vc.uncovered(s, "the discriminator %s of %s is not a string member", t.Discriminator, vt.Name)
				break
			}
			cond := sv + " != " + strconv.Quote(v.Tag)
			if f.Presence == gomodel.PresencePointer {
				cond = y.expr + "." + f.GoName + " == nil || " + cond
			}
			vc.c.line("if %s {", cond)
			vc.fail(p.member(t.Discriminator), "", strconv.Quote(fmt.Sprintf("variant %s must have %s %q", v.Name, t.Discriminator, v.Tag)))
			vc.c.line("}")
		}
		vc.check(s, y, p)
	}
	vc.c.line("default:")
	vc.fail(p, "", `"no variant of the union is set"`)
	vc.c.line("}")
}

// union emits the checks of a union's own schema on the JSON it holds,
// decoded as the first variant that can hold it: every variant's decoder
// is faithful, so any of them gives the schema the same JSON to judge.
func (vc *vctx) union(s *node, x val, p pos) {
	t := x.ref.Resolve().Named
	vc.c.line("switch {")
	vc.c.line("case %s.raw == nil:", x.expr)
	vc.fail(p, "", `"no value is set"`)
	vc.c.line("case jsonwire.IsNull(%s.raw):", x.expr)
	vc.null(s, p)
	vc.c.line("default:")
	var errs []string
	for _, v := range t.Variants {
		y, e := vc.c.fresh("y"), vc.c.fresh("err")
		errs = append(errs, e)
		stmts := vc.c.capture(func() { vc.check(s, val{expr: y, ref: v.Type}, p) })
		name := y
		if !uses(stmts, y) {
			name = "_"
		}
		vc.c.line("%s, %s := %s.As%s()", name, e, x.expr, v.Name)
		vc.c.line("if %s == nil {", e)
		vc.c.raw(stmts)
		vc.c.line("break")
		vc.c.line("}")
	}
	vc.fail(p, "", `"the value is none of the alternatives"`)
	if len(errs) > 0 {
		vc.c.line("%s.Unrepresentable(%s)", recv(p.v), strings.Join(errs, ", "))
	}
	vc.c.line("}")
}

// positions checks that every member, element and variant of the type
// decodes every value its schema admits there: otherwise the decoder
// would refuse a valid message.
func (vc *vctx) positions() {
	t := vc.t
	switch t.Kind {
	case gomodel.KindStruct:
		for _, f := range t.Fields {
			vc.position(memberSchemas(t.Schema, f.JSONName), fieldHolds(f), f.Type, f.Schema)
		}
		if t.Extra != nil {
			for _, s := range extraSchemas(t.Schema) {
				vc.position([]*node{s}, holds(t.Extra.Value), t.Extra.Value, s)
			}
		}
	case gomodel.KindMap:
		for _, s := range extraSchemas(t.Schema) {
			vc.position([]*node{s}, holds(t.Elem), t.Elem, s)
		}
	case gomodel.KindSlice:
		vc.position(itemSchemas(t.Schema), holds(t.Elem), t.Elem, t.Schema)
	case gomodel.KindTuple:
		for i, f := range t.Fields {
			vc.position(prefixSchemas(t.Schema, i), fieldHolds(f), f.Type, f.Schema)
		}
		if t.Rest != nil {
			vc.position(itemSchemas(t.Schema), holds(t.Rest), t.Rest, t.Schema)
		}
	case gomodel.KindUnion:
		held := kNull
		for _, v := range t.Variants {
			if v.Type.Resolve().Kind == gomodel.RefExternal {
				vc.uncovered(v.Schema, "variant %s is an x-go-type", v.Name)
			}
			held |= holds(v.Type)
		}
		if extra := admits(t.Schema, 0) &^ held; extra != 0 {
			vc.uncovered(t.Schema, "the schema admits %s, which no alternative of %s holds", extra, t.Name)
		}
	}
}

// position checks one place: the intersection of the schemas that apply
// there must admit nothing the Go type cannot hold; unnamed slices and maps
// are checked element by element.
func (vc *vctx) position(schemas []*node, held kinds, r *gomodel.TypeRef, at *node) {
	admitted := kAll
	for _, s := range schemas {
		admitted &= admits(s, 0)
	}
	if extra := admitted &^ held; extra != 0 {
		vc.uncovered(at, "the schema admits %s, which %s cannot hold", extra, gomodel.GoString(r))
		return
	}
	rr := r.Resolve()
	switch rr.Kind {
	case gomodel.RefPointer:
		vc.position(schemas, holds(rr.Elem)|kNull, rr.Elem, at)
	case gomodel.RefSlice:
		var items []*node
		for _, s := range schemas {
			items = append(items, itemSchemas(s)...)
		}
		vc.position(items, holds(rr.Elem), rr.Elem, at)
	case gomodel.RefMap:
		for _, s := range schemas {
			for _, e := range extraSchemas(s) {
				vc.position([]*node{e}, holds(rr.Elem), rr.Elem, at)
			}
		}
	case gomodel.RefExternal:
		vc.uncovered(at, "x-go-type %s decodes with its own rules, which need not match the schema", gomodel.GoString(rr))
	}
}

// inPlace returns s and the schemas it applies to the same value
// unconditionally: through $ref and allOf.
func inPlace(s *node) []*node {
	var out []*node
	seen := map[*node]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil || seen[n] || n.Kind != contract.KindObject {
			return
		}
		seen[n] = true
		out = append(out, n)
		walk(n.Ref)
		if all := n.Get("allOf"); all != nil {
			for _, it := range all.Items {
				walk(it)
			}
		}
	}
	walk(s)
	return out
}

// memberSchemas returns the schemas that apply to member name of an object
// valid for s: its properties entries, else the matching patternProperties
// and additionalProperties.
func memberSchemas(s *node, name string) []*node {
	var out []*node
	for _, part := range inPlace(s) {
		props, pats, addl := part.Get("properties"), part.Get("patternProperties"), part.Get("additionalProperties")
		if ps := props.Get(name); ps != nil {
			out = append(out, ps)
			continue
		}
		matched := false
		if pats != nil {
			for i, pat := range pats.Keys {
				if re, err := regexp.Compile(pat); err == nil && re.MatchString(name) {
					out = append(out, pats.Values[i])
					matched = true
				}
			}
		}
		if !matched && addl != nil {
			out = append(out, addl)
		}
	}
	return out
}

// extraSchemas returns the schemas that may apply to undeclared members.
func extraSchemas(s *node) []*node {
	var out []*node
	for _, part := range inPlace(s) {
		if pats := part.Get("patternProperties"); pats != nil {
			out = append(out, pats.Values...)
		}
		if addl := part.Get("additionalProperties"); addl != nil {
			out = append(out, addl)
		}
	}
	return out
}

// itemSchemas returns the "items" schemas that apply to array elements.
func itemSchemas(s *node) []*node {
	var out []*node
	for _, part := range inPlace(s) {
		if it := part.Get("items"); it != nil {
			out = append(out, it)
		}
	}
	return out
}

// prefixSchemas returns the schemas that apply to tuple element i.
func prefixSchemas(s *node, i int) []*node {
	var out []*node
	for _, part := range inPlace(s) {
		if pre := part.Get("prefixItems"); pre != nil && i < len(pre.Items) {
			out = append(out, pre.Items[i])
		} else if it := part.Get("items"); it != nil {
			out = append(out, it)
		}
	}
	return out
}

// validator renders a type's validateJSON method, and for a message type
// whose schema is covered, its exported Validate.
func (g *generator) validator(t *gomodel.Type) string {
	vs := g.vs
	if !vs.emit[t] {
		return ""
	}
	c := &code{}
	c.line("")
	c.line("func (m *%s) validateJSON(v *jsonwire.Validation, at, kw *jsonwire.Path) {", t.Name)
	c.raw(vs.bodies[t])
	c.line("}")
	if msgs := vs.roots[t]; len(msgs) > 0 {
		name := t.Name
		if len(msgs) == 1 {
			name = msgs[0]
		}
		c.line("")
		c.line("// Validate checks m against the schema of %s, all of which the generated", name)
		c.line("// decoder and checks cover; the runtime calls it instead of validating")
		c.line("// the JSON with jsonschema/v5. The error is invalid_argument with the")
		c.line("// violations as details.")
		c.line("func (m *%s) Validate() error {", t.Name)
		c.line("if m == nil {")
		c.line("return framework.Errorf(framework.CodeInvalidArgument, %q)", name+" is missing")
		c.line("}")
		c.line("var v jsonwire.Validation")
		c.line("m.validateJSON(&v, nil, nil)")
		c.line("return v.Err(%q)", name)
		c.line("}")
		c.line("")
		c.line("var _ framework.Validator = (*%s)(nil)", t.Name)
	}
	return c.b.String()
}

// coverageDoc explains, in a message type's doc comment, why it has no
// generated Validate.
func (g *generator) coverageDoc(t *gomodel.Type) string {
	vs := g.vs
	if len(vs.roots[t]) == 0 || vs.covered[t] {
		return ""
	}
	why := vs.whyNot(t)
	text := "It has no generated Validate, so the runtime validates it with jsonschema/v5"
	if len(why) > 0 {
		text += ": " + why[0]
	}
	return comment(text + ".")
}

// validationVars renders the package-level patterns and numbers the
// validators use.
func (g *generator) validationVars() string {
	vs := g.vs
	if len(vs.patterns) == 0 && len(vs.rats) == 0 {
		return ""
	}
	c := &code{}
	c.line("")
	c.line("// Patterns and numbers of the schemas, compiled once.")
	c.line("var (")
	n := 0
	for i, p := range vs.patterns {
		if vs.used("pattern" + strconv.Itoa(i)) {
			c.line("pattern%d = jsonwire.NewPattern(%s)", i, goString(p))
			n++
		}
	}
	for i, r := range vs.rats {
		if vs.used("number" + strconv.Itoa(i)) {
			c.line("number%d = jsonwire.Rat(%q)", i, r)
			n++
		}
	}
	c.line(")")
	if n == 0 {
		return ""
	}
	return c.b.String()
}

// goString quotes s as a Go string literal, raw when that reads better.
func goString(s string) string {
	if !strings.ContainsAny(s, "`\n\r") && strings.Contains(s, `\`) {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// used reports whether an emitted validator mentions a package variable.
func (vs *validators) used(name string) bool {
	for t := range vs.emit {
		if uses(vs.bodies[t], name) {
			return true
		}
	}
	return false
}

// onlyRef reports whether s is a "$ref" with nothing but annotations
// beside it.
func onlyRef(s *node) bool {
	if s.Kind != contract.KindObject || s.Ref == nil {
		return false
	}
	for _, k := range s.Keys {
		if k != "$ref" && (handled[k] || unsupported[k]) {
			return false
		}
	}
	return true
}

// branchTag returns the one string a branch of alternatives requires
// member prop to hold, if it says so plainly: prop required, and its
// schema a const or a one-value enum.
func branchTag(br *node, prop string) (string, bool) {
	required, tag, found := false, "", false
	for _, part := range inPlace(br) {
		if req := part.Get("required"); req != nil {
			for _, it := range req.Items {
				required = required || it.Text == prop
			}
		}
		ps := part.Get("properties").Get(prop)
		for _, sub := range inPlace(ps) {
			vals := sub.Get("enum")
			var v *node
			switch {
			case sub.Get("const") != nil:
				v = sub.Get("const")
			case vals != nil && len(vals.Items) == 1:
				v = vals.Items[0]
			}
			if v != nil && v.Kind == contract.KindString {
				tag, found = v.Text, true
			}
		}
	}
	return tag, required && found
}
