package diff

import (
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// member is one entry of an allOf, anyOf or oneOf list (or a $ref beside
// other keywords, which acts as one more allOf entry), with its path.
type member struct {
	schema *jsonschema.Schema
	path   string
}

func members(schemas []*jsonschema.Schema, path, keyword string) []member {
	list := make([]member, len(schemas))
	for i, schema := range schemas {
		list[i] = member{schema, joinPointer(path, keyword, strconv.Itoa(i))}
	}
	return list
}

// conjuncts returns what a schema requires besides its own keywords:
// references that sit beside other keywords, and allOf.
func conjuncts(s *jsonschema.Schema, path string) []member {
	var list []member
	for _, ref := range []struct {
		schema  *jsonschema.Schema
		keyword string
	}{{s.Ref, "$ref"}, {s.RecursiveRef, "$recursiveRef"}, {s.DynamicRef, "$dynamicRef"}} {
		if ref.schema != nil {
			list = append(list, member{ref.schema, joinPointer(path, ref.keyword)})
		}
	}
	return append(list, members(s.AllOf, path, "allOf")...)
}

// soleAlternatives returns the anyOf or oneOf list of a schema that
// asserts nothing else, or nil.
func soleAlternatives(s *jsonschema.Schema) (alternatives []*jsonschema.Schema, keyword string) {
	if (len(s.AnyOf) > 0) == (len(s.OneOf) > 0) {
		return nil, ""
	}
	rest := *s
	rest.AnyOf, rest.OneOf = nil, nil
	if !isTrivial(&rest, false) {
		return nil, ""
	}
	if len(s.AnyOf) > 0 {
		return s.AnyOf, "anyOf"
	}
	return s.OneOf, "oneOf"
}

// compareLifted handles a schema that is only a list of alternatives
// compared with one that has none, as when {"type": "string"} becomes
// {"anyOf": [{"type": "string"}, {"type": "null"}]}: the plain side is
// compared as a list of one alternative. It reports whether it did so.
func (c *comparator) compareLifted(o, n *jsonschema.Schema, path string) bool {
	oldAlternatives, oldKeyword := soleAlternatives(o)
	newAlternatives, newKeyword := soleAlternatives(n)
	switch {
	case oldAlternatives != nil && newAlternatives == nil && len(n.AnyOf)+len(n.OneOf) == 0 && !isTrivial(n, false):
		c.compareAlternatives(members(oldAlternatives, path, oldKeyword), oldKeyword == "oneOf",
			[]member{{n, path}}, false, oldKeyword)
		return true
	case newAlternatives != nil && oldAlternatives == nil && len(o.AnyOf)+len(o.OneOf) == 0 && !isTrivial(o, false):
		c.compareAlternatives([]member{{o, path}}, false,
			members(newAlternatives, path, newKeyword), newKeyword == "oneOf", newKeyword)
		return true
	}
	return false
}

func (c *comparator) compareCombinators(o, n *jsonschema.Schema, path string) {
	c.compareConjuncts(conjuncts(o, path), conjuncts(n, path))

	oldAny, oldOne, newAny, newOne := len(o.AnyOf) > 0, len(o.OneOf) > 0, len(n.AnyOf) > 0, len(n.OneOf) > 0
	switch {
	case oldAny && !oldOne && newOne && !newAny:
		c.compareCombinatorSwitch(o.AnyOf, false, n.OneOf, true, path)
	case oldOne && !oldAny && newAny && !newOne:
		c.compareCombinatorSwitch(o.OneOf, true, n.AnyOf, false, path)
	default:
		c.compareAlternativeLists(o.AnyOf, n.AnyOf, false, path, "anyOf")
		c.compareAlternativeLists(o.OneOf, n.OneOf, true, path, "oneOf")
	}

	notPath := joinPointer(path, "not")
	switch {
	case o.Not == nil && n.Not == nil:
	case o.Not == nil:
		c.record(notPath, KindConstraintAdded, narrows, "\"not\" constraint added")
	case n.Not == nil:
		c.record(notPath, KindConstraintRemoved, widens, "\"not\" constraint removed")
	default:
		flipped, strict := c.flipped, c.strict
		c.flipped, c.strict = !flipped, true
		c.compare(o.Not, n.Not, notPath)
		c.flipped, c.strict = flipped, strict
	}

	ifPath := joinPointer(path, "if")
	switch {
	case o.If == nil && n.If == nil:
	case o.If == nil:
		c.record(ifPath, KindConstraintAdded, narrows, "if/then/else constraint added")
	case n.If == nil:
		c.record(ifPath, KindConstraintRemoved, widens, "if/then/else constraint removed")
	case !c.samePredicate(o.If, n.If):
		c.record(ifPath, KindConditionChanged, narrows|widens,
			"the if condition changed (which values each branch governs cannot be compared, so this counts as breaking both ways)")
	default:
		c.compareSub(o.Then, n.Then, joinPointer(path, "then"))
		c.compareSub(o.Else, n.Else, joinPointer(path, "else"))
	}
}

// compareConjuncts compares allOf entries (and references beside other
// keywords): paired entries recursively, an added entry narrows, a removed
// one widens.
func (c *comparator) compareConjuncts(olds, news []member) {
	if len(olds) == 0 && len(news) == 0 {
		return
	}
	pairs, removed, added := c.matchMembers(olds, news)
	for _, pair := range pairs {
		c.compare(olds[pair[0]].schema, news[pair[1]].schema, olds[pair[0]].path)
	}
	for _, i := range removed {
		c.record(olds[i].path, KindConstraintRemoved, widens, "constraint %s removed", describeMember(olds[i].schema))
	}
	for _, j := range added {
		c.record(news[j].path, KindConstraintAdded, narrows, "constraint %s added", describeMember(news[j].schema))
	}
}

func (c *comparator) compareAlternativeLists(olds, news []*jsonschema.Schema, exclusive bool, path, keyword string) {
	switch {
	case len(olds) == 0 && len(news) == 0:
	case len(olds) == 0:
		c.record(joinPointer(path, keyword), KindConstraintAdded, narrows, "%s with %d alternatives added", keyword, len(news))
	case len(news) == 0:
		c.record(joinPointer(path, keyword), KindConstraintRemoved, widens, "%s with %d alternatives removed", keyword, len(olds))
	default:
		c.compareAlternatives(members(olds, path, keyword), exclusive, members(news, path, keyword), exclusive, keyword)
	}
}

// compareCombinatorSwitch handles anyOf becoming oneOf or the reverse. A
// oneOf rejects values that match two alternatives, so the switch narrows
// (to oneOf) or widens (to anyOf) unless the oneOf's alternatives are
// provably disjoint.
func (c *comparator) compareCombinatorSwitch(olds []*jsonschema.Schema, oldExclusive bool, news []*jsonschema.Schema, newExclusive bool, path string) {
	oldKeyword, newKeyword := "anyOf", "oneOf"
	if oldExclusive {
		oldKeyword, newKeyword = "oneOf", "anyOf"
	}
	var eff effect
	switch {
	case newExclusive && !allDisjoint(news):
		eff = narrows
	case oldExclusive && !allDisjoint(olds):
		eff = widens
	}
	c.record(joinPointer(path, oldKeyword), KindCombinatorChanged, eff, "%s became %s", oldKeyword, newKeyword)
	c.compareAlternatives(members(olds, path, oldKeyword), oldExclusive, members(news, path, newKeyword), newExclusive, newKeyword)
}

// compareAlternatives compares two lists of alternatives: paired ones
// recursively; a removed alternative narrows, an added one widens. In a
// oneOf, an alternative that may overlap the others also has the opposite
// effect, since a value matching two alternatives fails a oneOf.
func (c *comparator) compareAlternatives(olds []member, oldExclusive bool, news []member, newExclusive bool, keyword string) {
	pairs, removed, added := c.matchMembers(olds, news)
	saved := c.acc
	c.acc = 0
	for _, pair := range pairs {
		c.compare(olds[pair[0]].schema, news[pair[1]].schema, olds[pair[0]].path)
	}
	inner := c.acc
	c.acc |= saved
	c.checkOverlap(inner, olds, oldExclusive, news, newExclusive, keyword)
	for _, i := range removed {
		eff, note := narrows, ""
		if oldExclusive && !disjointFromOthers(olds, i) {
			eff, note = narrows|widens, overlapNote
		}
		kind, what := KindAlternativeRemoved, "alternative "+describeMember(olds[i].schema)
		if isOnlyNull(olds[i].schema) {
			kind, what = KindNullableRemoved, "null alternative"
		}
		c.record(olds[i].path, kind, eff, "%s removed from %s%s", what, keyword, note)
	}
	for _, j := range added {
		eff, note := widens, ""
		if newExclusive && !disjointFromOthers(news, j) {
			eff, note = narrows|widens, overlapNote
		}
		kind, what := KindAlternativeAdded, "alternative "+describeMember(news[j].schema)
		if isOnlyNull(news[j].schema) {
			kind, what = KindNullableAdded, "null alternative"
		}
		c.record(news[j].path, kind, eff, "%s added to %s%s", what, keyword, note)
	}
}

// checkOverlap adds the opposite effect of changes found inside paired
// oneOf alternatives (inner, as recorded) that may overlap: an alternative that widens may now
// match values another alternative also matches, which the oneOf then
// rejects; one that narrows may stop matching values that matched two, which
// the oneOf then accepts.
func (c *comparator) checkOverlap(inner effect, olds []member, oldExclusive bool, news []member, newExclusive bool, keyword string) {
	if c.flipped {
		inner = inner.flip()
	}
	var eff effect
	if inner&widens != 0 && newExclusive && !allDisjoint(schemasOf(news)) {
		eff |= narrows
	}
	if inner&narrows != 0 && oldExclusive && !allDisjoint(schemasOf(olds)) {
		eff |= widens
	}
	if eff != 0 && len(olds) > 0 {
		c.record(parentPath(olds[0].path), KindOneOfOverlap, eff,
			"alternatives of %s changed and may overlap, so a value may come to match two of them (and fail) or stop matching two (and pass)",
			keyword)
	}
}

func schemasOf(list []member) []*jsonschema.Schema {
	schemas := make([]*jsonschema.Schema, len(list))
	for i, m := range list {
		schemas[i] = m.schema
	}
	return schemas
}

// parentPath drops the last token of a JSON pointer.
func parentPath(pointer string) string {
	if i := strings.LastIndexByte(pointer, '/'); i >= 0 {
		return pointer[:i]
	}
	return pointer
}

// overlapNote explains why a oneOf member change counts both ways.
const overlapNote = " (it may overlap the others, and a value matching two fails oneOf, so this counts as breaking both ways)"

// maxMatchPairs bounds the old×new pairs compared in full when matching
// list members.
const maxMatchPairs = 256

// matchMembers pairs old and new list members, most certain first: members
// that accept the same values, then members with the same discriminator
// (a required property with one allowed value), then references to the
// same definition, then members accepting the same single set of types;
// then, when as many are left on each side, by position, and when one is
// left on one side, with each left on the other (comparing a member with
// several is conservative for allOf, anyOf and oneOf alike). What stays
// unpaired was removed or added.
func (c *comparator) matchMembers(olds, news []member) (pairs [][2]int, removed, added []int) {
	oldUsed, newUsed := make([]bool, len(olds)), make([]bool, len(news))
	pair := func(i, j int) {
		oldUsed[i], newUsed[j] = true, true
		pairs = append(pairs, [2]int{i, j})
	}
	if len(olds)*len(news) <= maxMatchPairs {
		for i := range olds {
			for j := range news {
				if !newUsed[j] && c.sameOnWire(olds[i].schema, news[j].schema) {
					pair(i, j)
					break
				}
			}
		}
	}
	for _, key := range []func(*jsonschema.Schema) string{discriminatorKey, refKey, typeKey} {
		oldKeys := map[string][]int{}
		for i := range olds {
			if !oldUsed[i] {
				if k := key(olds[i].schema); k != "" {
					oldKeys[k] = append(oldKeys[k], i)
				}
			}
		}
		newKeys := map[string][]int{}
		for j := range news {
			if !newUsed[j] {
				if k := key(news[j].schema); k != "" {
					newKeys[k] = append(newKeys[k], j)
				}
			}
		}
		for k, is := range oldKeys {
			if js := newKeys[k]; len(is) == 1 && len(js) == 1 {
				pair(is[0], js[0])
			}
		}
	}
	var restOld, restNew []int
	for i := range olds {
		if !oldUsed[i] {
			restOld = append(restOld, i)
		}
	}
	for j := range news {
		if !newUsed[j] {
			restNew = append(restNew, j)
		}
	}
	switch {
	case len(restOld) == len(restNew):
		for k := range restOld {
			pair(restOld[k], restNew[k])
		}
		restOld, restNew = nil, nil
	case len(restOld) == 1 && len(restNew) > 1:
		for _, j := range restNew {
			pairs = append(pairs, [2]int{restOld[0], j})
		}
		restOld, restNew = nil, nil
	case len(restNew) == 1 && len(restOld) > 1:
		for _, i := range restOld {
			pairs = append(pairs, [2]int{i, restNew[0]})
		}
		restOld, restNew = nil, nil
	}
	sort.SliceStable(pairs, func(a, b int) bool { return pairs[a][0] < pairs[b][0] })
	return pairs, restOld, restNew
}

// discriminatorKey names the first required property (by name) whose
// schema allows exactly one value, with that value: the tag of a tagged
// union.
func discriminatorKey(s *jsonschema.Schema) string {
	s = deref(s)
	if s == nil {
		return ""
	}
	required := append([]string(nil), s.Required...)
	sort.Strings(required)
	for _, name := range required {
		property, ok := s.Properties[name]
		if !ok {
			continue
		}
		_, values := effectiveTypes(orAnything(deref(property)))
		if values != nil && len(values.keys) == 1 {
			return name + "=" + values.keys[0]
		}
	}
	return ""
}

// refKey names the definition a member refers to by its pointer within its
// document, so that "#/$defs/Pod" in both versions pairs up.
func refKey(s *jsonschema.Schema) string {
	target := deref(s)
	if target == s || target == nil {
		return ""
	}
	if pointer, ok := locationPointer(target, oldDocument); ok {
		return pointer
	}
	if pointer, ok := locationPointer(target, newDocument); ok {
		return pointer
	}
	return ""
}

// typeKey names the set of types a member accepts, when it is not all.
func typeKey(s *jsonschema.Schema) string {
	s = deref(s)
	if s == nil || s.Always != nil {
		return ""
	}
	types, _ := effectiveTypes(s)
	if types == allTypes {
		return ""
	}
	return types.String()
}

func isOnlyNull(s *jsonschema.Schema) bool {
	s = deref(s)
	if s == nil || s.Always != nil {
		return false
	}
	types, _ := effectiveTypes(s)
	return types == typeNull
}

// describeMember names a list member for a message: the definition it
// refers to, or the types it accepts.
func describeMember(s *jsonschema.Schema) string {
	if key := refKey(s); key != "" {
		return "#" + key
	}
	if isFalse(deref(s)) {
		return "false"
	}
	types, _ := effectiveTypes(orAnything(deref(s)))
	return "(" + types.String() + ")"
}

// disjoint reports whether no value can match both schemas, as far as
// their types, their allowed values, or a required property whose allowed
// values differ (a discriminator) can tell. False means "may overlap".
func disjoint(a, b *jsonschema.Schema) bool {
	a, b = orAnything(deref(a)), orAnything(deref(b))
	if isFalse(a) || isFalse(b) {
		return true
	}
	typesA, valuesA := effectiveTypes(a)
	typesB, valuesB := effectiveTypes(b)
	if typesA&typesB == 0 {
		return true
	}
	if valuesA != nil && valuesB != nil && !valuesOverlap(valuesA, valuesB) {
		return true
	}
	if typesA&typesB != typeObject {
		// A discriminator tells objects apart only; other values pass
		// both schemas' object keywords.
		return false
	}
	required := stringSet(b.Required)
	for _, name := range a.Required {
		if !required[name] {
			continue
		}
		propertyA, okA := a.Properties[name]
		propertyB, okB := b.Properties[name]
		if !okA || !okB {
			continue
		}
		_, valuesA := effectiveTypes(orAnything(deref(propertyA)))
		_, valuesB := effectiveTypes(orAnything(deref(propertyB)))
		if valuesA != nil && valuesB != nil && !valuesOverlap(valuesA, valuesB) {
			return true
		}
	}
	return false
}

func valuesOverlap(a, b *valueSet) bool {
	for _, key := range a.keys {
		if b.has(key) {
			return true
		}
	}
	return false
}

func disjointFromOthers(list []member, index int) bool {
	for k := range list {
		if k != index && !disjoint(list[index].schema, list[k].schema) {
			return false
		}
	}
	return true
}

func allDisjoint(list []*jsonschema.Schema) bool {
	for i := range list {
		for j := i + 1; j < len(list); j++ {
			if !disjoint(list[i], list[j]) {
				return false
			}
		}
	}
	return true
}
