package gogen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// Generated validators check a decoded message against everything its
// schema says, keyword by keyword, on the Go value the generated decoder
// built. Which types get checks, and which keyword is checked on which Go
// value, is the model's decision ([gomodel.Package.DecideValidation],
// [gomodel.Validation.Keyword]): this file's walk renders the checks the
// model decided, fails on a keyword it did not decide, and writes
// validateJSON for the types the model marks Emit and Validate for covered
// messages. A message not covered is validated by the runtime with
// jsonschema/v5: one way or the other, never half.

type node = contract.Node

// validators holds, for one package, the generated validation code.
type validators struct {
	pkg *gomodel.Package
	// bodies is the body of each type's validateJSON method.
	bodies map[*gomodel.Type]string

	patterns  []string // regular expressions, by var index
	patternIx map[string]int
	rats      []string // numbers for multipleOf on floats, by var index
	ratIx     map[string]int
}

// buildValidators renders every type's checks as the model decided them
// (pkg.DecideValidation must have run). The error is a keyword the model
// did not decide, or decided checked where the renderer has no check.
func buildValidators(pkg *gomodel.Package) (*validators, error) {
	vs := &validators{pkg: pkg, bodies: map[*gomodel.Type]string{}, patternIx: map[string]int{}, ratIx: map[string]int{}}
	for _, t := range pkg.Types {
		if t.Kind == gomodel.KindAlias {
			continue
		}
		vc := &vctx{vs: vs, t: t, c: &code{}, inlining: map[string]bool{}}
		vc.body()
		if vc.err != nil {
			return nil, vc.err
		}
		vs.bodies[t] = vc.c.b.String()
	}
	return vs, nil
}

// vctx generates the validateJSON body of one type.
type vctx struct {
	vs       *validators
	t        *gomodel.Type
	c        *code
	inlining map[string]bool
	err      error // the first disagreement with the model
}

// decided returns the model's decision about keyword k of s on x: whether
// generated code checks it. The renderer renders only what the model
// decided: a keyword it did not decide is an error.
func (vc *vctx) decided(s *node, k string, x val) bool {
	d, ok := vc.t.Validation.Keyword(s, k, x.path)
	if !ok {
		vc.fault(s, "the model did not decide %s on %s (%s)", k, x.path, gomodel.GoString(x.ref))
		return false
	}
	return d.Checked
}

// refused asserts that the model decided generated code does not check
// keyword k of s on x, where the renderer has no check for it.
func (vc *vctx) refused(s *node, k string, x val) {
	if vc.decided(s, k, x) {
		vc.cannot(s, k, x)
	}
}

// cannot reports a keyword the model decided is checked but the renderer
// has no check for.
func (vc *vctx) cannot(s *node, k string, x val) {
	vc.fault(s, "the model decided generated code checks %s on %s (%s), which it cannot", k, x.path, gomodel.GoString(x.ref))
}

func (vc *vctx) fault(s *node, format string, args ...any) {
	if vc.err == nil {
		vc.err = fmt.Errorf("lockstep-gen: validator of %s: %s: %s", vc.t.Name, gomodel.Where(s), fmt.Sprintf(format, args...))
	}
}

// val is a Go value being checked: an addressable expression, its path in
// the model's notation ([gomodel.KeywordCheck.Value]) and its type.
type val struct {
	expr string
	path string
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
	vc.rangeOverKeyed(key, elem, over, false, emit)
}

// rangeOverKeyed is rangeOver; with keyed, over is a map whose keys are an
// enum type, and the body's key is their string.
func (vc *vctx) rangeOverKeyed(key, elem, over string, keyed bool, emit func()) {
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
	case keyed && e == "_":
		vc.c.line("for %s := range %s {", k+"Key", over)
		vc.c.line("%s := string(%s)", k, k+"Key")
	case keyed:
		vc.c.line("for %s, %s := range %s {", k+"Key", e, over)
		vc.c.line("%s := string(%s)", k, k+"Key")
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
	self := val{expr: "m", path: "m", ref: &gomodel.TypeRef{Kind: gomodel.RefNamed, Named: t, Name: t.Name}, self: true}
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
	if r.Kind == gomodel.RefNamed && r.Named.Kind != gomodel.KindAlias && r.Named.StandsFor(s) && !x.self {
		vc.call(r.Named, x, p)
		return
	}
	key := fmt.Sprintf("%p|%s", s, x.path)
	if vc.inlining[key] {
		vc.refused(s, "(loop)", x)
		return
	}
	vc.inlining[key] = true
	defer delete(vc.inlining, key)
	switch {
	case r.Kind == gomodel.RefPointer:
		vc.nonNil(x.expr, func() { vc.null(s, p) }, func() {
			vc.check(s, val{expr: "(*" + x.expr + ")", path: gomodel.ValueDeref(x.path), ref: r.Elem}, p)
		})
		return
	case r.Kind == gomodel.RefSlice || r.Kind == gomodel.RefMap ||
		r.Kind == gomodel.RefNamed && (r.Named.Kind == gomodel.KindSlice || r.Named.Kind == gomodel.KindMap):
		vc.nonNil(x.expr, func() { vc.null(s, p) }, func() { vc.value(s, x, p) })
		return
	case r.Kind == gomodel.RefExternal:
		vc.refused(s, "x-go-type", x)
		return
	case r.Kind == gomodel.RefNamed && (r.Named.Kind == gomodel.KindTaggedUnion || r.Named.Kind == gomodel.KindUnion) &&
		!x.self && gomodel.OnlyRef(s):
		// a reference to the union's schema, with annotations beside it
		if vc.decided(s, "$ref", x) {
			vc.check(s.Ref, x, p.keyword("$ref"))
		}
		return
	case r.Kind == gomodel.RefNamed && r.Named.Kind == gomodel.KindTaggedUnion:
		vc.tagged(s, x, p)
		return
	case r.Kind == gomodel.RefNamed && r.Named.Kind == gomodel.KindUnion:
		if !x.self {
			vc.refused(s, "(union)", x)
			return
		}
		vc.union(s, x, p)
		return
	}
	vc.value(s, x, p)
}

// call emits a call of another type's validateJSON.
func (vc *vctx) call(t *gomodel.Type, x val, p pos) {
	if !vc.t.Validation.CallsType(t) {
		vc.fault(t.Schema, "the model did not decide that the checks of %s call those of %s", vc.t.Name, t.Name)
	}
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

// value emits the checks of s on a non-null value.
func (vc *vctx) value(s *node, x val, p pos) {
	r := x.ref.Resolve()
	sh, sv, base := shapeOf(r, x.expr)
	objectDone, arrayDone, containsDone := false, false, false
	for i, k := range s.Keys {
		kv := s.Values[i]
		if gomodel.RoleOf(k) == gomodel.KeywordIgnored {
			continue
		}
		if gomodel.Family(k) == "" && !vc.decided(s, k, x) {
			continue
		}
		switch k {
		case "$ref":
			vc.check(s.Ref, x, p.keyword("$ref"))
		case "type":
			vc.typeCheck(kv, sh, sv, p)
		case "enum", "const":
			vals := []*node{kv}
			if k == "enum" {
				vals = kv.Items
			}
			vc.enum(s, k, vals, sh, sv, x, p)
		case "format", "minLength", "maxLength", "pattern":
			vc.stringCheck(s, k, kv, sh, sv, x, p)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			vc.numberCheck(s, k, kv, sh, sv, base, x, p)
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
				vc.refused(s, k, x)
			default:
				vc.decided(s, k, x) // the keywords do not apply to the value
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
				vc.refused(s, k, x)
			default:
				vc.decided(s, k, x) // the keywords do not apply to the value
			}
		case "contains", "minContains", "maxContains":
			if containsDone {
				continue
			}
			containsDone = true
			vc.decided(s, k, x)
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
			qp := p.keyword("if")
			qp.v, qp.quiet = "&"+q, true
			then, els := s.Get("then"), s.Get("else")
			if then == nil && els == nil {
				// "if" alone asserts nothing: its checks are walked, so
				// that every keyword under it is decided, and dropped.
				vc.c.capture(func() { vc.check(kv, x, qp) })
				continue
			}
			vc.c.line("%s := %s.Quiet()", q, recv(p.v))
			vc.check(kv, x, qp)
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

// validator renders a type's validateJSON method, and for a message type
// whose schema is covered, its exported Validate.
func (g *generator) validator(t *gomodel.Type) string {
	vs := g.vs
	if t.Validation == nil || !t.Validation.Emit {
		return ""
	}
	c := &code{}
	c.line("")
	c.line("func (m *%s) validateJSON(v *jsonwire.Validation, at, kw *jsonwire.Path) {", t.Name)
	c.raw(vs.bodies[t])
	c.line("}")
	if msgs := t.Validation.Messages; len(msgs) > 0 {
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
	if t.Validation == nil || len(t.Validation.Messages) == 0 || t.Validation.Covered {
		return ""
	}
	why := gomodel.WhyNot(t)
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
			// RE2 where it runs the pattern, else the ECMA-262 engine
			// (lookahead, lookbehind, backreferences): the rule of
			// jsonwire.CompilePattern, which the checks were decided by.
			ctor := "NewPattern"
			if re, err := jsonwire.CompilePattern(p); err == nil && re.ECMA() {
				ctor = "NewECMAPattern"
			}
			c.line("pattern%d = jsonwire.%s(%s)", i, ctor, goString(p))
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
	for _, t := range vs.pkg.Types {
		if t.Validation != nil && t.Validation.Emit && uses(vs.bodies[t], name) {
			return true
		}
	}
	return false
}
