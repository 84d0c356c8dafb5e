package gomodel

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/diff"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Conversion identity: which conversion functions a forked package has,
// what each is named, and whether it is generated or written by hand, is
// decided here; the renderer writes the bodies.

// Conversion is one conversion function between a type of a package and
// a type of the version it forks from, in one direction.
type Conversion struct {
	// Name is the function's name, as Kubernetes' conversion-gen names it:
	// Convert_<from package>_<T>_To_<to package>_<U>.
	Name string `json:"name"`
	// From and To are the two types; FromName and ToName spell them
	// qualified by package name (v1.Status).
	From     *Type  `json:"-"`
	To       *Type  `json:"-"`
	FromName string `json:"from"`
	ToName   string `json:"to"`
	// Up is true from the earlier version to the current one.
	Up bool `json:"up,omitempty"`
	// Compatible reports that codegen/diff finds every value of From valid
	// for To: the conversion is generated whole. Otherwise it calls a
	// hand-written convert_<…>, and Why is the first breaking change.
	Compatible bool   `json:"compatible"`
	Why        string `json:"why,omitempty"`
	// Renames are the members of the two types that codegen/diff finds
	// renamed (one removed and one added with the same schema), earlier
	// version's name → current version's name: the conversion carries the
	// value across instead of dropping it.
	Renames map[string]string `json:"renames,omitempty"`
}

// SharedMethod is a method both versions declare, with the same name and
// batch mode: the fork wiring serves and calls it through conversions.
type SharedMethod struct {
	Old, Cur contract.Method
}

// SharedTopic is a server-written topic both versions declare: the
// runtime serves its earlier form by converting each change down.
type SharedTopic struct {
	Old, Cur contract.Topic
}

// Shared lists the methods and server-written topics both versions
// declare, in the current contract's order.
func (f *Fork) Shared(cur *Package) ([]SharedMethod, []SharedTopic) {
	var methods []SharedMethod
	for _, m := range cur.Contract.Methods {
		for _, o := range f.Old.Contract.Methods {
			if o.Name == m.Name && o.Batch == m.Batch {
				methods = append(methods, SharedMethod{Old: o, Cur: m})
			}
		}
	}
	var topics []SharedTopic
	for _, t := range cur.Contract.Topics {
		for _, o := range f.Old.Contract.Topics {
			if o.Name == t.Name && o.Writer == handshake.RoleServer && t.Writer == handshake.RoleServer {
				topics = append(topics, SharedTopic{Old: o, Cur: t})
			}
		}
	}
	return methods, topics
}

// DecideConversions decides every conversion the fork file has: the ones
// the fork wiring calls (for each shared method its request and response
// in both directions, for each shared topic its object in both directions:
// down for a server's earlier form, up for a client watching a server of
// the earlier version), then,
// breadth first, the conversions of the types those nest, paired member by
// member ([Fork.nested]). [Fork.Conversions] lists them in that order,
// which is the order the renderer writes them in.
func (f *Fork) DecideConversions(cur *Package) error {
	if f.Old.Name == cur.Name {
		return fmt.Errorf("lockstep-gen: %s forks from a package also named %s; conversions are named after both packages, so name them apart (v1, v2)", cur.Name, f.Old.Name)
	}
	methods, topics := f.Shared(cur)
	for _, m := range methods {
		oldReq, curReq := RootType(f.Old.Messages[m.Old.Request]), RootType(cur.Messages[m.Cur.Request])
		oldResp, curResp := RootType(f.Old.Messages[m.Old.Response]), RootType(cur.Messages[m.Cur.Response])
		if oldReq == nil || curReq == nil || oldResp == nil || curResp == nil {
			return fmt.Errorf("lockstep-gen: method %s: fork conversions need message types of this package on both sides, not raw JSON or x-go-type", m.Cur.Name)
		}
		f.Conversion(cur, oldReq, curReq, true)
		f.Conversion(cur, curReq, oldReq, false)
		f.Conversion(cur, curResp, oldResp, false)
		f.Conversion(cur, oldResp, curResp, true)
	}
	for _, tp := range topics {
		from, to := RootType(cur.Messages[tp.Cur.Object]), RootType(f.Old.Messages[tp.Old.Object])
		if from == nil || to == nil {
			return fmt.Errorf("lockstep-gen: topic %s: fork conversions need message types of this package on both sides, not raw JSON or x-go-type", tp.Cur.Name)
		}
		f.Conversion(cur, from, to, false)
		f.Conversion(cur, to, from, true)
	}
	for i := 0; i < len(f.Conversions); i++ {
		f.nested(cur, f.Conversions[i])
	}
	return nil
}

// Decided returns the conversion [Fork.DecideConversions] decided from a
// type of one version to a type of the other, or nil.
func (f *Fork) Decided(cur *Package, from, to *Type, up bool) *Conversion {
	return f.byName[f.conversionName(cur, from, to, up)]
}

// nested asks for the conversions that c's member-by-member copy calls:
// its members paired by name (a tuple's by position, and its rest), its
// undeclared members, a tagged union's variants paired by tag, or, for
// any other kind, the value itself. A member whose two types differ in
// shape is left to the hand-written conversion when c is not compatible,
// so it needs none.
func (f *Fork) nested(cur *Package, c *Conversion) {
	from, to := c.From, c.To
	member := func(fi, fo *Field) {
		if c.Compatible || SameShape(fi.Type, fo.Type) {
			f.valuePairs(cur, fi.Type, fo.Type, c.Up)
		}
	}
	switch {
	case from.Kind == KindStruct && to.Kind == KindStruct:
		for _, fo := range to.Fields {
			for _, fi := range from.Fields {
				if fi.JSONName == fo.JSONName {
					member(fi, fo)
					break
				}
			}
		}
		if from.Extra != nil && to.Extra != nil {
			f.valuePairs(cur, &TypeRef{Kind: RefMap, Elem: from.Extra.Value}, &TypeRef{Kind: RefMap, Elem: to.Extra.Value}, c.Up)
		}
	case from.Kind == KindTuple && to.Kind == KindTuple:
		for i, fo := range to.Fields {
			if i < len(from.Fields) {
				member(from.Fields[i], fo)
			}
		}
		if from.Rest != nil && to.Rest != nil {
			f.valuePairs(cur, &TypeRef{Kind: RefSlice, Elem: from.Rest}, &TypeRef{Kind: RefSlice, Elem: to.Rest}, c.Up)
		}
	case from.Kind == KindTaggedUnion && to.Kind == KindTaggedUnion:
		for _, vo := range to.Variants {
			var vi *Variant
			for _, v := range from.Variants {
				if v.Tag == vo.Tag {
					vi = v
				}
			}
			if vi != nil {
				f.valuePairs(cur, vi.Type, vo.Type, c.Up)
			}
		}
	default:
		f.valuePairs(cur, &TypeRef{Kind: RefNamed, Named: from, Name: from.Name}, &TypeRef{Kind: RefNamed, Named: to, Name: to.Name}, c.Up)
	}
}

// valuePairs asks for the conversion a value of type from converting into
// type to calls: through pointers, slices and maps to their elements, down
// to two named types of a [Convertible] kind. Any other pair converts
// without a function of its own (a Go conversion or through JSON).
func (f *Fork) valuePairs(cur *Package, from, to *TypeRef, up bool) {
	rf, rt := from.Resolve(), to.Resolve()
	switch {
	case rf.Kind == RefPointer || rt.Kind == RefPointer:
		if rf.Kind == rt.Kind {
			f.valuePairs(cur, rf.Elem, rt.Elem, up)
		}
	case IsSlice(rf) && IsSlice(rt):
		f.valuePairs(cur, SliceElem(rf), SliceElem(rt), up)
	case IsMap(rf) && IsMap(rt):
		f.valuePairs(cur, MapElem(rf), MapElem(rt), up)
	case rf.Kind == RefNamed && rt.Kind == RefNamed && Convertible(rf.Named.Kind, rt.Named.Kind):
		f.Conversion(cur, rf.Named, rt.Named, up)
	}
}

// located is a type's schema in a message bundle.
type located struct {
	msg *contract.Message
	ptr string
}

// Conversion returns the conversion from a type of one version to a type
// of the other (up: from f.Old's to cur's), deciding its name and whether
// it is generated the first time it is asked for; [Fork.Conversions]
// lists them in that order.
func (f *Fork) Conversion(cur *Package, from, to *Type, up bool) *Conversion {
	fromPkg, toPkg := cur.Name, f.Old.Name
	if up {
		fromPkg, toPkg = toPkg, fromPkg
	}
	name := f.conversionName(cur, from, to, up)
	if c := f.byName[name]; c != nil {
		return c
	}
	if f.byName == nil {
		f.byName = map[string]*Conversion{}
		f.bundles = map[*Type]located{}
		locateAll(cur, f.bundles)
		locateAll(f.Old, f.bundles)
	}
	c := &Conversion{Name: name, From: from, To: to, FromName: fromPkg + "." + from.Name, ToName: toPkg + "." + to.Name, Up: up}
	c.Compatible, c.Why, c.Renames = f.compatible(from, to, up)
	f.byName[name] = c
	f.Conversions = append(f.Conversions, c)
	return c
}

// conversionName is the name of the conversion from a type of one version
// to a type of the other, as Kubernetes' conversion-gen names it.
func (f *Fork) conversionName(cur *Package, from, to *Type, up bool) string {
	fromPkg, toPkg := cur.Name, f.Old.Name
	if up {
		fromPkg, toPkg = toPkg, fromPkg
	}
	return "Convert_" + fromPkg + "_" + from.Name + "_To_" + toPkg + "_" + to.Name
}

// compatible asks codegen/diff whether every value of from is valid for
// to: for data going up (earlier → current) that the current version
// narrows nothing, for data going down that it widens nothing. It also
// returns the members of the two types the diff finds renamed.
func (f *Fork) compatible(from, to *Type, up bool) (bool, string, map[string]string) {
	oldT, curT := to, from
	dir := diff.Response
	if up {
		oldT, curT = from, to
		dir = diff.Request
	}
	lo, okOld := f.bundles[oldT]
	lc, okCur := f.bundles[curT]
	if !okOld || !okCur {
		return false, "its schemas could not be located in the message bundles to compare them", nil
	}
	changes, err := diff.CompatibleAt(lo.msg.Bundle, lo.ptr, lc.msg.Bundle, lc.ptr, dir)
	if err != nil {
		return false, err.Error(), nil
	}
	renames := renamesAt(changes, lo.ptr, oldT, curT)
	for _, c := range changes {
		if c.Breaking {
			return false, strings.TrimSpace(c.Path + " " + c.Message), renames
		}
	}
	return true, "", renames
}

// renamedTo reads the new name out of a field_renamed change's message.
var renamedTo = regexp.MustCompile(`renamed to ("(?:[^"\\]|\\.)*")`)

// renamesAt picks, from the changes between the old type at pointer ptr
// and the current one, the renames of the old type's own members whose
// new name the current type declares.
func renamesAt(changes []diff.Change, ptr string, oldT, curT *Type) map[string]string {
	var out map[string]string
	for _, c := range changes {
		if c.Kind != diff.KindFieldRenamed {
			continue
		}
		m := renamedTo.FindStringSubmatch(c.Message)
		if m == nil {
			continue
		}
		to, err := strconv.Unquote(m[1])
		if err != nil {
			continue
		}
		for _, fo := range oldT.Fields {
			if c.Path != ptr+"/properties/"+escapeToken(fo.JSONName) || fieldByJSONName(curT.Fields, fo.JSONName) != nil || fieldByJSONName(curT.Fields, to) == nil {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[fo.JSONName] = to
		}
	}
	return out
}

// escapeToken escapes a JSON pointer token.
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// fieldByJSONName returns the field of a member name, or nil.
func fieldByJSONName(fields []*Field, name string) *Field {
	for _, fl := range fields {
		if fl.JSONName == name {
			return fl
		}
	}
	return nil
}

// locateAll records where the types a message uses sit in its bundle.
func locateAll(pkg *Package, into map[*Type]located) {
	for _, m := range pkg.Contract.Messages {
		for _, t := range pkg.Types {
			if _, done := into[t]; done || t.Schema == nil {
				continue
			}
			if p, ok := m.Locate(t.Schema); ok {
				into[t] = located{msg: m, ptr: p}
			}
		}
	}
}
