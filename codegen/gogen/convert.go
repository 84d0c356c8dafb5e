package gogen

import (
	"fmt"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// Fork mode: a contract with forkFrom gets, in its package, conversions
// between its message types and those of the version it forks from, named
// as Kubernetes' conversion-gen names them, and the wiring that serves and
// calls the earlier version through them.
//
// For every pair of types that meet (the request and response of each
// method both versions declare, and the types they nest, paired member by
// member) and each direction:
//
//   - autoConvert_<from>_<T>_To_<to>_<U> copies what the two types share:
//     members of the same name, converted as their types allow; members only
//     one side has are dropped, and those the generator cannot convert are
//     listed in a comment;
//   - Convert_<from>_<T>_To_<to>_<U> is the conversion the wiring calls.
//     Where codegen/diff finds the change compatible in that direction
//     (every value of the source is valid for the target), it is
//     autoConvert. Where not, it calls convert_<from>_<T>_To_<to>_<U>, which
//     the generator declares nowhere: the package does not compile until it
//     is written by hand, usually beside the contract, calling autoConvert
//     for what is shared.
//
// <from> and <to> are the two packages' names (v1, v2).

// ForkFile holds the conversions and fork wiring of a package whose
// contract has forkFrom.
const ForkFile = "lockstep_fork.gen.go"

// forkGen renders the fork file.
type forkGen struct {
	g        *generator
	cur, old *gomodel.Package
	alias    string // the earlier package's import name
	oldName  string // names in function names: the packages' names
	curName  string
	c        *code
	// current is the pair whose autoConvert is being rendered.
	current *convPair
	// adapterCode holds the functions in the runtime's shape, by name.
	adapterCode  map[string]string
	adapterOrder []string
	// calls are the conversions each conversion's autoConvert calls.
	calls map[*convPair][]*convPair
}

// handWritten reports whether p, or a conversion it calls at any depth,
// is written by hand.
func (f *forkGen) handWritten(p *convPair) bool {
	seen := map[*convPair]bool{}
	var walk func(p *convPair) bool
	walk = func(p *convPair) bool {
		if seen[p] {
			return false
		}
		seen[p] = true
		if !p.Compatible {
			return true
		}
		for _, q := range f.calls[p] {
			if walk(q) {
				return true
			}
		}
		return false
	}
	return walk(p)
}

// convPair is one conversion function, as the model decided it.
type convPair = gomodel.Conversion

func (f *forkGen) qualified(t *gomodel.Type, old bool) string {
	if old {
		return f.alias + "." + t.Name
	}
	return t.Name
}

func (f *forkGen) refString(r *gomodel.TypeRef, old bool) string {
	switch r.Kind {
	case gomodel.RefNamed:
		if old {
			return f.alias + "." + r.Name
		}
		return r.Name
	case gomodel.RefSlice:
		return "[]" + f.refString(r.Elem, old)
	case gomodel.RefMap:
		key := "string"
		if r.Key != nil {
			key = f.refString(r.Key, old)
		}
		return "map[" + key + "]" + f.refString(r.Elem, old)
	case gomodel.RefPointer:
		return "*" + f.refString(r.Elem, old)
	}
	return gomodel.GoString(r)
}

// fieldString spells a field's type with what its presence adds.
func (f *forkGen) fieldString(fl *gomodel.Field, old bool) string {
	base := f.refString(fl.Type, old)
	switch fl.Presence {
	case gomodel.PresencePointer:
		return "*" + base
	case gomodel.PresenceNullable:
		return "jsonwire.Nullable[" + base + "]"
	}
	return base
}

// pair returns the conversion between two named types that the model
// decided ([gomodel.Fork.DecideConversions] finds every one the rendered
// copies call); one it did not decide is an error of the generator.
func (f *forkGen) pair(from, to *gomodel.Type, up bool) *convPair {
	p := f.g.pkg.Fork.Decided(f.cur, from, to, up)
	if p != nil && f.current != nil {
		if f.calls == nil {
			f.calls = map[*convPair][]*convPair{}
		}
		f.calls[f.current] = append(f.calls[f.current], p)
	}
	if p == nil {
		if f.g.err == nil {
			f.g.err = fmt.Errorf("lockstep-gen: internal error: the model decided no conversion from %s to %s", from.Name, to.Name)
		}
		return &convPair{Name: "undecided"}
	}
	return p
}

// generateFork renders the fork file, or returns nil when the contract
// forks from nothing.
func (g *generator) generateFork() ([]byte, error) {
	fork := g.pkg.Fork
	if fork == nil {
		return nil, nil
	}
	f := &forkGen{
		g: g, cur: g.pkg, old: fork.Old, alias: fork.Alias, oldName: fork.Old.Name, curName: g.pkg.Name,
		c: &code{},
	}
	if err := fork.DecideConversions(f.cur); err != nil {
		return nil, err
	}
	shared, topics := fork.Shared(f.cur)
	for _, p := range fork.Conversions {
		f.emitPair(p)
	}
	conversions := f.c.b.String()
	f.c = &code{}
	if fork.Compatible {
		f.compatibleWiring(shared, topics)
	} else {
		f.wiring(shared, topics)
	}
	return []byte(f.c.b.String() + conversions), nil
}

// compatibleWiring renders, for a version compatible both ways with the
// one it forks from, the framework.Compatible the package's Contract
// carries: the conversions of every method and server-written topic of
// the earlier version, in the four directions the two sides use.
func (f *forkGen) compatibleWiring(shared []gomodel.SharedMethod, topics []gomodel.SharedTopic) {
	c := f.c
	oc := f.old.Contract
	name := compatibleVar(f.g.pkg.Fork)
	c.line("// %s is %s %s, which this version derives from through a change", name, oc.Name, oc.Version)
	c.line("// compatible both ways, with the conversions between the two, all")
	c.line("// generated: [Contract] carries it, so that clients of it also call")
	c.line("// servers of %s and [Register] serves clients of %s, with no fork mode.", oc.Version, oc.Version)
	c.line("var %s = framework.Compatible{Contract: %s.Contract, Methods: map[string]framework.CompatibleMethod{", name, f.alias)
	for _, m := range shared {
		c.line("Method%s: framework.ConvertCompatibleMethod(%s, %s, %s, %s),", m.Cur.Name,
			f.adapter(m.Old.Request, m.Cur.Request, true), f.adapter(m.Cur.Request, m.Old.Request, false),
			f.adapter(m.Old.Response, m.Cur.Response, true), f.adapter(m.Cur.Response, m.Old.Response, false))
	}
	c.line("}, Topics: map[string]framework.CompatibleTopic{")
	for _, tp := range topics {
		c.line("Topic%s: framework.ConvertCompatibleTopic(%s, %s),", tp.Cur.Name,
			f.adapter(tp.Old.Object, tp.Cur.Object, true), f.adapter(tp.Cur.Object, tp.Old.Object, false))
	}
	c.line("}}")
	for _, a := range f.adapters() {
		c.raw(a)
	}
}

// wiring renders RegisterFork and Fork<Old>: the methods and the
// server-written topics of the earlier version, served by conversion, and
// the conversions a client uses to call and watch servers of it.
func (f *forkGen) wiring(shared []gomodel.SharedMethod, topics []gomodel.SharedTopic) {
	c := f.c
	oc := f.old.Contract
	c.line("// The fork wiring needs the lockstep runtime 0.3.0 or newer, which serves")
	c.line("// forked topics from RegisterFork and converts them up for clients: with")
	c.line("// an older one this line does not compile.")
	c.line("const _ = framework.IsAtLeastVersion0_3_0")
	c.line("")
	forkVar := "Fork" + gomodel.GoName(f.oldName)
	var oldOnly []string
	for _, o := range oc.Methods {
		found := false
		for _, m := range shared {
			found = found || m.Old.Name == o.Name
		}
		if !found {
			oldOnly = append(oldOnly, o.Name)
		}
	}
	c.line("// RegisterFork installs impl on s for [Contract], as [Register] does, and")
	c.line("// serves the version it forks from, %s %s, with the same handlers: a", oc.Name, oc.Version)
	c.line("// call at %s is converted up, handled once, and its answer converted back", oc.Version)
	c.line("// down. Use it instead of Register on a server in fork mode.")
	if len(topics) > 0 {
		var names []string
		for _, tp := range topics {
			names = append(names, tp.Cur.Name)
		}
		c.line("//")
		c.line("// It serves topic %s at %s too, converting each change written", strings.Join(names, ", "), oc.Version)
		c.line("// through the writer of this version's form down once: make that writer")
		c.line("// with Serve<Topic> before or after, or the server refuses to start.")
	}
	if len(oldOnly) > 0 {
		c.line("//")
		c.line("// %s also declares %s, which this version does not: register", oc.Version, strings.Join(oldOnly, ", "))
		c.line("// hand-written handlers for it on %s.Contract with [framework.HandleUnary]", f.alias)
		c.line("// or [framework.HandleBatch], or the server refuses to start with a")
		c.line("// method of %s unhandled.", oc.Version)
	}
	c.line("func RegisterFork(s *framework.Server, impl Server) {")
	c.line("Register(s, impl)")
	for _, m := range shared {
		fn := "ForkUnary"
		if m.Cur.Batch {
			fn = "ForkBatch"
		}
		c.line("framework.%s(s, %s.Contract, Contract, Method%s, %s, %s)", fn, f.alias, m.Cur.Name,
			f.adapter(m.Old.Request, m.Cur.Request, true), f.adapter(m.Cur.Response, m.Old.Response, false))
	}
	for _, tp := range topics {
		c.line("framework.ForkServedTopic(s, %s.Contract, Contract, Topic%s, %s)", f.alias, tp.Cur.Name,
			f.adapter(tp.Cur.Object, tp.Old.Object, false))
	}
	c.line("}")
	c.line("")
	c.line("// %s lets a client of [Contract] also call and watch servers that speak", forkVar)
	c.line("// only %s (%s.Contract): its requests are converted down, the answers", oc.Version, f.alias)
	c.line("// and the objects of the topics it watches up. Put it in")
	c.line("// [framework.ClientConfig].Fork.")
	c.line("var %s = framework.Fork{Contract: %s.Contract, Methods: map[string]framework.MethodConversion{", forkVar, f.alias)
	for _, m := range shared {
		c.line("Method%s: framework.ConvertMethod(%s, %s),", m.Cur.Name,
			f.adapter(m.Cur.Request, m.Old.Request, false), f.adapter(m.Old.Response, m.Cur.Response, true))
	}
	if len(topics) == 0 {
		c.line("}}")
	} else {
		c.line("}, Topics: map[string]framework.TopicConversion{")
		for _, tp := range topics {
			c.line("Topic%s: framework.ConvertTopic(%s),", tp.Cur.Name, f.adapter(tp.Old.Object, tp.Cur.Object, true))
		}
		c.line("}}")
	}
	for _, a := range f.adapters() {
		c.raw(a)
	}
}

// adapter returns the name of the function that converts message from
// (of the source version) into a new message to, in the shape the
// runtime's fork functions take, and renders it once.
func (f *forkGen) adapter(fromMsg, toMsg string, up bool) string {
	fromPkg, toPkg := f.cur, f.old
	if up {
		fromPkg, toPkg = f.old, f.cur
	}
	from, to := gomodel.RootType(fromPkg.Messages[fromMsg]), gomodel.RootType(toPkg.Messages[toMsg])
	p := f.pair(from, to, up)
	name := lowerFirst(to.Name) + "From" + gomodel.GoName(f.oldName)
	if !up {
		name = lowerFirst(from.Name) + "To" + gomodel.GoName(f.oldName)
	}
	if f.adapterCode == nil {
		f.adapterCode = map[string]string{}
	}
	if _, ok := f.adapterCode[name]; !ok {
		c := &code{}
		c.line("")
		c.line("// %s converts %s values for fork mode.", name, f.qualified(from, up))
		c.line("func %s(in *%s) (*%s, error) {", name, f.qualified(from, up), f.qualified(to, !up))
		c.line("out := new(%s)", f.qualified(to, !up))
		c.line("if err := %s(in, out); err != nil {", p.Name)
		c.line("return nil, err")
		c.line("}")
		if p.Compatible && f.handWritten(p) {
			// The conversion is generated, but some conversion it calls
			// is written by hand: the message is checked here.
			if check := f.resultCheck(to, !up, "out"); check != nil {
				check.emit(c, name, f.qualified(to, !up), "nil, ")
			}
		}
		c.line("return out, nil")
		c.line("}")
		f.adapterCode[name] = c.b.String()
		f.adapterOrder = append(f.adapterOrder, name)
	}
	return name
}

func (f *forkGen) adapters() []string {
	var out []string
	for _, n := range f.adapterOrder {
		out = append(out, f.adapterCode[n])
	}
	return out
}

// addr takes the address of an addressable expression: (*p) is p.
func addr(expr string) string {
	if strings.HasPrefix(expr, "(*") && strings.HasSuffix(expr, ")") && strings.Count(expr, "(") == 1 {
		return expr[2 : len(expr)-1]
	}
	return "&" + expr
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// emitPair renders autoConvert and Convert for one pair.
func (f *forkGen) emitPair(p *convPair) {
	c := f.c
	in, out := f.qualified(p.From, p.Up), f.qualified(p.To, !p.Up)
	auto := "auto" + p.Name
	body := &code{n: c.n}
	saved := f.c
	f.c, f.current = body, p
	notes := f.convertBody(p)
	f.c = saved
	c.n = body.n
	c.line("")
	c.line("// %s copies what %s and %s share, member by member.", auto, in, out)
	for _, n := range notes {
		c.line("// %s", n)
	}
	c.line("func %s(in *%s, out *%s) error {", auto, in, out)
	c.raw(body.b.String())
	c.line("return nil")
	c.line("}")
	c.line("")
	if p.Compatible {
		c.line("// %s converts %s values into %s ones. Every value", p.Name, in, out)
		c.line("// of the one is valid for the other, so the conversion is generated.")
		c.line("func %s(in *%s, out *%s) error {", p.Name, in, out)
		c.line("return %s(in, out)", auto)
		c.line("}")
		return
	}
	hand := "c" + p.Name[1:]
	c.line("// %s converts %s values into %s ones by calling", p.Name, in, out)
	c.line("// %s, which is written by hand: the change is not", hand)
	c.line("// compatible in this direction (%s).", oneLine(p.Why))
	check := f.resultCheck(p.To, !p.Up, "out")
	if check == nil {
		// A type no message is: the conversion of the message it is
		// part of is written by hand too (codegen/diff finds that
		// message's change incompatible as well), and checks it.
		c.line("func %s(in *%s, out *%s) error {", p.Name, in, out)
		c.line("return %s(in, out)", hand)
		c.line("}")
		return
	}
	c.line("// The result is checked by %s: a conversion that leaves a", check.by)
	c.line("// required member absent, or sets a value its schema refuses, is an")
	c.line("// internal error, never a message the other version rejects.")
	c.line("func %s(in *%s, out *%s) error {", p.Name, in, out)
	c.line("if err := %s(in, out); err != nil {", hand)
	c.line("return err")
	c.line("}")
	check.emit(c, p.Name, out, "")
	c.line("return nil")
	c.line("}")
}

// resultCheck is how a converted value is checked against its schema.
type resultCheck struct {
	by   string                             // what checks it, for the comment
	emit func(c *code, fn, typ, ret string) // emits the check; ret precedes the error returned
}

// resultCheck returns the check of a converted value v of type t (of the
// earlier package when old): the message's generated Validate where
// generated checks cover its schema, or else its contract's schema, with
// jsonschema/v5, on its JSON encoding. Nil for a type that no message is.
func (f *forkGen) resultCheck(t *gomodel.Type, old bool, v string) *resultCheck {
	fail := func(c *code, fn, typ, ret string) {
		c.line("return "+ret+"framework.Errorf(framework.CodeInternal, \"%s: the converted value is not a valid %s: %%v\", err)", fn, typ)
	}
	if hasValidate(t) {
		return &resultCheck{by: f.qualified(t, old) + ".Validate", emit: func(c *code, fn, typ, ret string) {
			c.line("if err := %s.Validate(); err != nil {", v)
			fail(c, fn, typ, ret)
			c.line("}")
		}}
	}
	if t.Validation == nil || len(t.Validation.Messages) == 0 {
		return nil
	}
	contract := "Contract"
	if old {
		contract = f.alias + ".Contract"
	}
	msg := t.Validation.Messages[0]
	return &resultCheck{by: fmt.Sprintf("%s.ValidateJSON(%q)", contract, msg),
		emit: func(c *code, fn, typ, ret string) {
			c.line("if raw, err := json.Marshal(%s); err != nil {", v)
			fail(c, fn, typ, ret)
			c.line("} else if err := %s.ValidateJSON(%q, raw); err != nil {", contract, msg)
			fail(c, fn, typ, ret)
			c.line("}")
		}}
}

// hasValidate reports whether a type has the exported Validate of a
// message whose schema generated checks cover.
func hasValidate(t *gomodel.Type) bool {
	return t.Validation != nil && t.Validation.Emit && len(t.Validation.Messages) > 0
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// convertBody emits the statements of autoConvert for a pair and returns
// notes on what it leaves out.
func (f *forkGen) convertBody(p *convPair) []string {
	from, to := p.From, p.To
	var notes []string
	switch {
	case from.Kind == gomodel.KindStruct && to.Kind == gomodel.KindStruct:
		renamedFrom := func(fo *gomodel.Field) *gomodel.Field {
			for oldName, curName := range p.Renames {
				if p.Up && curName == fo.JSONName {
					return fieldNamed(from.Fields, oldName)
				}
				if !p.Up && oldName == fo.JSONName {
					return fieldNamed(from.Fields, curName)
				}
			}
			return nil
		}
		renamed := map[*gomodel.Field]*gomodel.Field{}
		for _, fo := range to.Fields {
			fi := fieldNamed(from.Fields, fo.JSONName)
			if fi == nil {
				if fi = renamedFrom(fo); fi != nil {
					renamed[fi] = fo
				}
			}
			if fi == nil {
				notes = append(notes, fmt.Sprintf("out.%s (%q) has no counterpart in %s and is left absent.", fo.GoName, fo.JSONName, f.qualified(from, p.Up)))
				continue
			}
			if note := f.member(fi, fo, "in."+fi.GoName, "out."+fo.GoName, p.Up); note != "" {
				notes = append(notes, note)
			}
		}
		for _, fi := range from.Fields {
			if fo := renamed[fi]; fo != nil {
				notes = append(notes, fmt.Sprintf("in.%s (%q) is out.%s (%q), renamed: its value is carried across.", fi.GoName, fi.JSONName, fo.GoName, fo.JSONName))
				continue
			}
			if fieldNamed(to.Fields, fi.JSONName) == nil {
				notes = append(notes, fmt.Sprintf("in.%s (%q) has no counterpart in %s and is dropped.", fi.GoName, fi.JSONName, f.qualified(to, !p.Up)))
			}
		}
		switch {
		case from.Extra != nil && to.Extra != nil:
			f.value(mapOf(from.Extra.Value), mapOf(to.Extra.Value), "in."+from.Extra.GoName, "out."+to.Extra.GoName, p.Up)
		case from.Extra != nil:
			notes = append(notes, fmt.Sprintf("in.%s (undeclared members) is dropped.", from.Extra.GoName))
		}
	case from.Kind == gomodel.KindTuple && to.Kind == gomodel.KindTuple:
		for i, fo := range to.Fields {
			if i >= len(from.Fields) {
				notes = append(notes, fmt.Sprintf("out.%s has no counterpart and is left absent.", fo.GoName))
				continue
			}
			if note := f.member(from.Fields[i], fo, "in."+from.Fields[i].GoName, "out."+fo.GoName, p.Up); note != "" {
				notes = append(notes, note)
			}
		}
		if from.Rest != nil && to.Rest != nil {
			f.value(&gomodel.TypeRef{Kind: gomodel.RefSlice, Elem: from.Rest}, &gomodel.TypeRef{Kind: gomodel.RefSlice, Elem: to.Rest}, "in.Rest", "out.Rest", p.Up)
		}
	case from.Kind == gomodel.KindTaggedUnion && to.Kind == gomodel.KindTaggedUnion:
		for _, vo := range to.Variants {
			var vi *gomodel.Variant
			for _, v := range from.Variants {
				if v.Tag == vo.Tag {
					vi = v
				}
			}
			if vi == nil {
				notes = append(notes, fmt.Sprintf("variant %s (%q) has no counterpart.", vo.Name, vo.Tag))
				continue
			}
			f.c.line("if in.%s != nil {", vi.Name)
			f.c.line("out.%s = new(%s)", vo.Name, f.refString(vo.Type, !p.Up))
			f.value(vi.Type, vo.Type, "(*in."+vi.Name+")", "(*out."+vo.Name+")", p.Up)
			f.c.line("}")
		}
	default:
		f.value(selfRef(from), selfRef(to), "(*in)", "(*out)", p.Up)
	}
	return notes
}

func selfRef(t *gomodel.Type) *gomodel.TypeRef {
	return &gomodel.TypeRef{Kind: gomodel.RefNamed, Named: t, Name: t.Name}
}

func mapOf(v *gomodel.TypeRef) *gomodel.TypeRef {
	return &gomodel.TypeRef{Kind: gomodel.RefMap, Elem: v}
}

func fieldNamed(fields []*gomodel.Field, name string) *gomodel.Field {
	for _, fl := range fields {
		if fl.JSONName == name {
			return fl
		}
	}
	return nil
}

// member emits the conversion of one struct member or tuple element,
// mapping absent, null and value between the two presences. It returns a
// note when a state of the source has no place in the target.
func (f *forkGen) member(fi, fo *gomodel.Field, in, out string, up bool) string {
	c := f.c
	if !f.current.Compatible && !gomodel.SameShape(fi.Type, fo.Type) {
		// Converting through JSON would fail on every value.
		return fmt.Sprintf("in.%s and out.%s (%q) differ in shape and are left to the hand-written conversion.", fi.GoName, fo.GoName, fi.JSONName)
	}
	type states struct{ absent, null string } // Go conditions, "" when impossible
	src := states{}
	val := in
	switch fi.Presence {
	case gomodel.PresencePointer:
		if fi.Required {
			src.null = in + " == nil"
		} else {
			src.absent = in + " == nil"
		}
		val = "(*" + in + ")"
	case gomodel.PresenceOmitZero:
		src.absent = in + " == nil"
	case gomodel.PresenceNullable:
		src.absent = in + ".IsZero()"
		src.null = in + ".IsNull()"
	}
	var lost []string
	setAbsent := func() {
		switch fo.Presence {
		case gomodel.PresencePointer, gomodel.PresenceOmitZero:
			c.line("%s = nil", out)
		case gomodel.PresenceNullable:
			c.line("%s = %s{}", out, f.fieldString(fo, !up))
		default:
			lost = append(lost, "absent")
		}
	}
	setNull := func() {
		switch {
		case fo.Presence == gomodel.PresenceNullable:
			c.line("%s = jsonwire.Null[%s]()", out, f.refString(fo.Type, !up))
		case fo.Presence == gomodel.PresencePointer && fo.Required,
			fo.Presence == gomodel.PresenceValue && fo.Type.Nilable() && !fo.Type.IsRaw():
			c.line("%s = nil", out)
		case fo.Type.IsRaw():
			c.line("%s = json.RawMessage(\"null\")", out)
		default:
			lost = append(lost, "null")
		}
	}
	setValue := func() {
		switch fo.Presence {
		case gomodel.PresencePointer:
			p := c.fresh("p")
			c.line("%s := new(%s)", p, f.refString(fo.Type, !up))
			f.value(fi.Type, fo.Type, val, "(*"+p+")", up)
			c.line("%s = %s", out, p)
		case gomodel.PresenceNullable:
			v := c.fresh("v")
			c.line("var %s %s", v, f.refString(fo.Type, !up))
			if fi.Presence == gomodel.PresenceNullable {
				x := c.fresh("x")
				c.line("%s, _ := %s.Get()", x, in)
				f.value(fi.Type, fo.Type, x, v, up)
			} else {
				f.value(fi.Type, fo.Type, val, v, up)
			}
			c.line("%s = jsonwire.Value(%s)", out, v)
		default:
			if fi.Presence == gomodel.PresenceNullable {
				x := c.fresh("x")
				c.line("%s, _ := %s.Get()", x, in)
				f.value(fi.Type, fo.Type, x, out, up)
			} else {
				f.value(fi.Type, fo.Type, val, out, up)
			}
		}
	}
	if fi.Presence == gomodel.PresenceOmitZero && fo.Presence == gomodel.PresenceOmitZero {
		// absent is nil on both sides, and the value conversion keeps nil
		f.value(fi.Type, fo.Type, in, out, up)
		return ""
	}
	var branches []func()
	var conds []string
	if src.absent != "" {
		conds, branches = append(conds, src.absent), append(branches, setAbsent)
	}
	if src.null != "" {
		conds, branches = append(conds, src.null), append(branches, setNull)
	}
	if len(conds) == 0 {
		setValue()
	} else {
		for i, cond := range conds {
			if i == 0 {
				c.line("if %s {", cond)
			} else {
				c.line("} else if %s {", cond)
			}
			branches[i]()
		}
		c.line("} else {")
		setValue()
		c.line("}")
	}
	if len(lost) > 0 {
		return fmt.Sprintf("A %s %s (%q) has no place in out.%s, which is left as it is.", strings.Join(lost, " or "), "in."+fi.GoName, fi.JSONName, fo.GoName)
	}
	return ""
}

// value emits the conversion of a value of type from (expression in) into
// the addressable out of type to.
func (f *forkGen) value(from, to *gomodel.TypeRef, in, out string, up bool) {
	c := f.c
	rf, rt := from.Resolve(), to.Resolve()
	fail := "return err"
	switch {
	case rf.Kind == gomodel.RefPointer || rt.Kind == gomodel.RefPointer:
		if rf.Kind != rt.Kind {
			f.viaJSON(in, out)
			return
		}
		c.line("if %s == nil {", in)
		c.line("%s = nil", out)
		c.line("} else {")
		p := c.fresh("p")
		c.line("%s := new(%s)", p, f.refString(rt.Elem, !up))
		f.value(rf.Elem, rt.Elem, "(*"+in+")", "(*"+p+")", up)
		c.line("%s = %s", out, p)
		c.line("}")
	case gomodel.IsSlice(rf) && gomodel.IsSlice(rt):
		c.line("if %s == nil {", in)
		c.line("%s = nil", out)
		c.line("} else {")
		s, i := c.fresh("s"), c.fresh("i")
		c.line("%s := make(%s, len(%s))", s, f.refString(to, !up), in)
		c.line("for %s := range %s {", i, in)
		f.value(gomodel.SliceElem(rf), gomodel.SliceElem(rt), in+"["+i+"]", s+"["+i+"]", up)
		c.line("}")
		c.line("%s = %s", out, s)
		c.line("}")
	case gomodel.IsMap(rf) && gomodel.IsMap(rt):
		c.line("if %s == nil {", in)
		c.line("%s = nil", out)
		c.line("} else {")
		m, k, e := c.fresh("m"), c.fresh("k"), c.fresh("e")
		c.line("%s := make(%s, len(%s))", m, f.refString(to, !up), in)
		c.line("for %s := range %s {", k, in)
		c.line("var %s %s", e, f.refString(gomodel.MapElem(rt), !up))
		x := c.fresh("x")
		c.line("%s := %s[%s]", x, in, k)
		f.value(gomodel.MapElem(rf), gomodel.MapElem(rt), x, e, up)
		switch toKey := gomodel.MapKey(rt); {
		case toKey != nil:
			// An enum key: its value converts as its string does.
			c.line("%s[%s(%s)] = %s", m, f.refString(toKey, !up), k, e)
		case gomodel.MapKey(rf) != nil:
			c.line("%s[string(%s)] = %s", m, k, e)
		default:
			c.line("%s[%s] = %s", m, k, e)
		}
		c.line("}")
		c.line("%s = %s", out, m)
		c.line("}")
	case rf.Kind == gomodel.RefNamed && rt.Kind == gomodel.RefNamed && gomodel.Convertible(rf.Named.Kind, rt.Named.Kind):
		p := f.pair(rf.Named, rt.Named, up)
		c.line("if err := %s(%s, %s); err != nil {", p.Name, addr(in), addr(out))
		c.line("%s", fail)
		c.line("}")
	default:
		if expr, ok := f.scalar(rf, rt, in, up); ok {
			c.line("%s = %s", out, expr)
			return
		}
		if rf.Kind == gomodel.RefBuiltin && rf.Name == "time.Time" && gomodel.ScalarKind(rt) == "string" {
			c.line("%s = %s(%s.Format(time.RFC3339Nano))", out, f.refString(to, !up), in)
			return
		}
		if gomodel.ScalarKind(rf) == "string" && rt.Kind == gomodel.RefBuiltin && rt.Name == "time.Time" {
			t := c.fresh("t")
			c.line("%s, ok := jsonwire.ParseDateTime(string(%s))", t, in)
			c.line("if !ok {")
			c.line("return fmt.Errorf(\"%%q is not a date-time\", %s)", in)
			c.line("}")
			c.line("%s = %s", out, t)
			return
		}
		f.viaJSON(in, out)
	}
}

// scalar returns the Go conversion of a scalar into another of the same
// family.
func (f *forkGen) scalar(from, to *gomodel.TypeRef, in string, up bool) (string, bool) {
	if from.Kind == gomodel.RefBuiltin && to.Kind == gomodel.RefBuiltin && from.Name == to.Name {
		if from.IsRaw() {
			return "append(json.RawMessage(nil), " + in + "...)", true
		}
		return in, true
	}
	if from.Kind == gomodel.RefExternal && to.Kind == gomodel.RefExternal && gomodel.GoString(from) == gomodel.GoString(to) {
		return in, true
	}
	k := gomodel.ScalarKind(from)
	if k == "" || k != gomodel.ScalarKind(to) {
		return "", false
	}
	return f.refString(to, !up) + "(" + in + ")", true
}

// viaJSON converts through JSON: correct for any two types that hold the
// same JSON, which the pair's compatibility promises.
func (f *forkGen) viaJSON(in, out string) {
	f.c.line("if err := jsonwire.Convert(%s, %s); err != nil {", addr(in), addr(out))
	f.c.line("return err")
	f.c.line("}")
}
