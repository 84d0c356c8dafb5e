package diff

import (
	"fmt"
	"math/big"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// maxSteps bounds the work of one comparison: the number of schema pairs
// visited, including those visited to match alternatives. Real message
// schemas need a few thousand; hostile ones stop here and count as
// breaking.
const maxSteps = 100_000

type budget struct {
	left      int
	exhausted bool
}

func (b *budget) spend() bool {
	if b.left <= 0 {
		b.exhausted = true
		return false
	}
	b.left--
	return true
}

type schemaPair struct{ old, new *jsonschema.Schema }

type visit struct {
	pair    schemaPair
	flipped bool
	strict  bool
}

type sameKey struct {
	pair   schemaPair
	strict bool
}

// comparator walks an old and a new schema side by side and records what
// differs. Each pair of subschemas is compared once (which also guards
// recursive schemas); "not" flips the meaning of what is found beneath it.
type comparator struct {
	budget *budget
	same   map[sameKey]bool // memo of sameOnWire, shared with sub-comparisons
	// visited holds, for each pair compared, the effect of everything found
	// beneath it, which oneOf's overlap check needs; acc gathers it for
	// the pair being compared. A pair met again while still being compared
	// (a cycle) contributes its effect from the previous pass (prior), or,
	// in the last pass allowed, an unknown effect.
	visited     map[visit]effect
	done        map[visit]bool
	acc         effect
	prior       map[visit]effect
	pessimistic bool
	assumed     map[visit]effect // what cycles took each pair's effect to be
	flipped     bool             // under a "not": narrowing and widening swap
	strict      bool             // under a "not" or an "if": undeclared properties accept anything
	findings    []finding
	seen        map[finding]bool
}

// maxPasses bounds the passes over a recursive schema; see [comparator].
const maxPasses = 4

// runComparison compares two schemas, repeating the comparison while the
// effects found beneath recursive pairs keep growing (they only grow, and
// usually settle in the second pass), and returns the last pass.
func runComparison(oldSchema, newSchema *jsonschema.Schema, path string, shared *budget, same map[sameKey]bool, strict bool) *comparator {
	var prior map[visit]effect
	for pass := 1; ; pass++ {
		c := &comparator{
			budget: shared, same: same, strict: strict,
			visited: map[visit]effect{}, done: map[visit]bool{}, seen: map[finding]bool{},
			prior: prior, pessimistic: pass == maxPasses, assumed: map[visit]effect{},
		}
		c.compare(oldSchema, newSchema, path)
		settled := true
		for v, assumed := range c.assumed {
			settled = settled && c.visited[v] == assumed
		}
		if settled || pass == maxPasses || shared.exhausted {
			return c
		}
		prior = c.visited
	}
}

// record notes one finding at path (a JSON pointer into the old document).
func (c *comparator) record(path string, kind Kind, eff effect, format string, args ...any) {
	c.recordWhy(path, kind, eff, "", format, args...)
}

func (c *comparator) recordWhy(path string, kind Kind, eff effect, why, format string, args ...any) {
	if c.flipped {
		// A specific explanation speaks of the unflipped effect.
		eff, why = eff.flip(), ""
	}
	c.acc |= eff
	f := finding{path: path, kind: kind, eff: eff, what: fmt.Sprintf(format, args...), why: why}
	if c.seen[f] {
		return
	}
	c.seen[f] = true
	c.findings = append(c.findings, f)
}

// sameOnWire reports whether two schemas accept and send the same values:
// comparing them finds nothing that narrows or widens. It is used to pair
// alternatives and to spot renamed fields. A pair under comparison is
// assumed equal, so recursive schemas terminate.
func (c *comparator) sameOnWire(oldSchema, newSchema *jsonschema.Schema) bool {
	return c.sameAs(oldSchema, newSchema, c.strict)
}

// samePredicate is sameOnWire in strict mode: the two schemas accept the
// same values, undeclared properties included.
func (c *comparator) samePredicate(oldSchema, newSchema *jsonschema.Schema) bool {
	return c.sameAs(oldSchema, newSchema, true)
}

func (c *comparator) sameAs(oldSchema, newSchema *jsonschema.Schema, strict bool) bool {
	key := sameKey{schemaPair{oldSchema, newSchema}, strict}
	if same, ok := c.same[key]; ok {
		return same
	}
	c.same[key] = true
	sub := runComparison(oldSchema, newSchema, "", c.budget, c.same, strict)
	same := !c.budget.exhausted
	for _, f := range sub.findings {
		if f.eff != 0 {
			same = false
			break
		}
	}
	c.same[key] = same
	return same
}

// anything is the schema that accepts every value: what an absent
// subschema means.
var anything = &jsonschema.Schema{
	MinProperties: -1, MaxProperties: -1, MinItems: -1, MaxItems: -1,
	MinContains: 1, MaxContains: -1, MinLength: -1, MaxLength: -1,
}

// nothing is the schema that accepts no value: what a false
// additionalProperties or additionalItems means.
var nothing = func() *jsonschema.Schema {
	s := *anything
	never := false
	s.Always = &never
	return &s
}()

func orAnything(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return anything
	}
	return s
}

func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Always != nil && !*s.Always
}

// isTrivial reports whether s asserts nothing: every value passes it.
// Annotations do not count; neither do references when ignoreRefs is set.
func isTrivial(s *jsonschema.Schema, ignoreRefs bool) bool {
	if s == nil {
		return true
	}
	if s.Always != nil {
		return *s.Always
	}
	if !ignoreRefs && (s.Ref != nil || s.RecursiveRef != nil || s.DynamicRef != nil) {
		return false
	}
	return len(s.Types) == 0 && s.Constant == nil && s.Enum == nil &&
		s.Not == nil && len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0 && s.If == nil &&
		s.MinProperties <= 0 && s.MaxProperties < 0 && len(s.Required) == 0 &&
		len(s.Properties) == 0 && s.PropertyNames == nil && len(s.PatternProperties) == 0 &&
		trivialAdditional(s.AdditionalProperties) && len(s.Dependencies) == 0 &&
		len(s.DependentRequired) == 0 && len(s.DependentSchemas) == 0 && s.UnevaluatedProperties == nil &&
		s.MinItems <= 0 && s.MaxItems < 0 && !s.UniqueItems && s.Items == nil && s.AdditionalItems == nil &&
		len(s.PrefixItems) == 0 && s.Items2020 == nil && s.Contains == nil && s.UnevaluatedItems == nil &&
		s.MinLength <= 0 && s.MaxLength < 0 && s.Pattern == nil && s.Format == "" &&
		s.ContentEncoding == "" && s.ContentMediaType == "" &&
		s.Minimum == nil && s.ExclusiveMinimum == nil && s.Maximum == nil && s.ExclusiveMaximum == nil &&
		s.MultipleOf == nil
}

// trivialAdditional reports whether an additionalProperties or
// additionalItems value (nil, bool or *Schema) accepts everything.
func trivialAdditional(value any) bool {
	switch v := value.(type) {
	case nil:
		return true
	case bool:
		return v
	case *jsonschema.Schema:
		return v.Ref == nil && v.RecursiveRef == nil && v.DynamicRef == nil && isTrivial(v, false)
	}
	return false
}

// soleRef returns the one reference of a schema that asserts nothing else,
// or nil.
func soleRef(s *jsonschema.Schema) *jsonschema.Schema {
	var target *jsonschema.Schema
	count := 0
	for _, ref := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.DynamicRef} {
		if ref != nil {
			target = ref
			count++
		}
	}
	if count != 1 || !isTrivial(s, true) {
		return nil
	}
	return target
}

// maxRefChain bounds how many references in a row deref follows; the
// compiler already refuses reference loops.
const maxRefChain = 64

// deref follows references from schemas that consist of nothing but one
// reference (annotations aside), so that {"$ref": "#/$defs/X"} and the
// inline X compare equal.
func deref(s *jsonschema.Schema) *jsonschema.Schema {
	for range maxRefChain {
		if s == nil {
			return s
		}
		target := soleRef(s)
		if target == nil {
			return s
		}
		s = target
	}
	return s
}

// oldPath returns where s sits in the old document, or fallback when s is
// not part of it.
func (c *comparator) oldPath(s *jsonschema.Schema, fallback string) string {
	if pointer, ok := locationPointer(s, oldDocument); ok {
		return pointer
	}
	return fallback
}

// compare records every difference between oldSchema and newSchema; path
// is where oldSchema sits in the old document (or would sit, when the old
// side has nothing there).
func (c *comparator) compare(oldSchema, newSchema *jsonschema.Schema, path string) {
	if !c.budget.spend() {
		return
	}
	o, n := deref(orAnything(oldSchema)), deref(orAnything(newSchema))
	path = c.oldPath(o, path)
	v := visit{schemaPair{o, n}, c.flipped, c.strict}
	if summary, ok := c.visited[v]; ok {
		if !c.done[v] {
			summary = c.prior[v]
			if c.pessimistic {
				summary = narrows | widens
			}
			c.assumed[v] = summary
		}
		c.acc |= summary
		return
	}
	c.visited[v] = 0
	saved := c.acc
	c.acc = 0
	defer func() {
		c.visited[v], c.done[v] = c.acc, true
		c.acc |= saved
	}()

	c.compareDefaults(o, n, path)
	switch oldFalse, newFalse := isFalse(o), isFalse(n); {
	case oldFalse && newFalse:
		return
	case oldFalse:
		c.record(path, KindNowAllowed, widens, "this place accepted no value and now accepts some")
		return
	case newFalse:
		c.record(path, KindNowForbidden, narrows, "this place no longer accepts any value")
		return
	}
	if c.compareLifted(o, n, path) {
		return
	}
	oldTypes, newTypes := c.compareTypesAndValues(o, n, path)
	common := oldTypes & newTypes
	if common&typeNumber != 0 {
		c.compareNumbers(o, n, path)
	}
	if common&typeString != 0 {
		c.compareStrings(o, n, path)
	}
	if common&typeArray != 0 {
		c.compareArrays(o, n, path)
	}
	if common&typeObject != 0 {
		c.compareObjects(o, n, path)
	}
	c.compareCombinators(o, n, path)
}

// compareSub compares two optional subschemas where absent means "accept
// anything".
func (c *comparator) compareSub(oldSchema, newSchema *jsonschema.Schema, path string) {
	if oldSchema == nil && newSchema == nil {
		return
	}
	c.compare(oldSchema, newSchema, path)
}

func (c *comparator) compareDefaults(o, n *jsonschema.Schema, path string) {
	if o.Default == nil && n.Default == nil {
		return
	}
	path = joinPointer(path, "default")
	switch {
	case o.Default == nil:
		c.record(path, KindDefaultChanged, 0, "default %s added", displayJSON(n.Default))
	case n.Default == nil:
		c.record(path, KindDefaultChanged, 0, "default %s removed", displayJSON(o.Default))
	case canonicalJSON(o.Default) != canonicalJSON(n.Default):
		c.record(path, KindDefaultChanged, 0, "default changed from %s to %s", displayJSON(o.Default), displayJSON(n.Default))
	}
}

// effectiveTypes returns the types a schema's own type, enum and const
// keywords allow, and its value set (nil when unconstrained).
func effectiveTypes(s *jsonschema.Schema) (typeSet, *valueSet) {
	types := typesOf(s.Types)
	values := newValueSet(s.Enum, s.Constant, types)
	if values != nil {
		types &= values.types
	}
	return types, values
}

// compareTypesAndValues compares type, enum and const, and returns the
// types each side allows so that keywords for other types can be skipped.
func (c *comparator) compareTypesAndValues(o, n *jsonschema.Schema, path string) (typeSet, typeSet) {
	oldTypes, oldValues := effectiveTypes(o)
	newTypes, newValues := effectiveTypes(n)
	defer c.checkValues(o, n, oldValues, newValues, path)
	if oldValues != nil && newValues != nil {
		c.compareValueSets(o, n, oldValues, newValues, path)
		return oldTypes, newTypes
	}
	c.compareTypeSets(oldTypes, newTypes, joinPointer(path, "type"))
	switch {
	case oldValues == nil && newValues != nil:
		if n.Constant != nil {
			c.record(joinPointer(path, "const"), KindConstAdded, narrows, "value fixed to %s", firstDisplay(newValues))
		} else {
			c.record(joinPointer(path, "enum"), KindEnumAdded, narrows, "values restricted to an enum of %d", len(newValues.keys))
		}
	case oldValues != nil && newValues == nil:
		if o.Constant != nil {
			c.record(joinPointer(path, "const"), KindConstRemoved, widens, "value no longer fixed to %s", firstDisplay(oldValues))
		} else {
			c.record(joinPointer(path, "enum"), KindEnumRemoved, widens, "enum of %d values removed", len(oldValues.keys))
		}
	}
	return oldTypes, newTypes
}

// checkValues settles exactly what a finite set of values (an enum or a
// const) loses or gains: each old value the old schema accepts must pass
// the new one, and each new value the new schema accepts must pass the old
// one, whatever other keywords say. Values that compareValueSets already
// reported as removed or added are skipped.
func (c *comparator) checkValues(o, n *jsonschema.Schema, oldValues, newValues *valueSet, path string) {
	if o.Location == "" || n.Location == "" {
		return
	}
	keyword := func(s *jsonschema.Schema) string {
		if s.Enum == nil {
			return "const"
		}
		return "enum"
	}
	if oldValues != nil {
		for _, key := range oldValues.keys {
			value := oldValues.values[key]
			if newValues != nil && !newValues.has(key) || o.Validate(value) != nil || n.Validate(value) == nil {
				continue
			}
			c.record(joinPointer(path, keyword(o)), KindEnumValueRemoved, narrows,
				"value %s is no longer accepted (other keywords now reject it)", oldValues.display[key])
		}
	}
	if newValues != nil {
		for _, key := range newValues.keys {
			value := newValues.values[key]
			if oldValues != nil && !oldValues.has(key) || n.Validate(value) != nil || o.Validate(value) == nil {
				continue
			}
			c.record(joinPointer(path, keyword(n)), KindEnumValueAdded, widens,
				"value %s may now be sent, which the old schema rejects", newValues.display[key])
		}
	}
}

func firstDisplay(values *valueSet) string {
	if len(values.keys) == 0 {
		return "an impossible value"
	}
	return values.display[values.keys[0]]
}

func (c *comparator) compareTypeSets(oldTypes, newTypes typeSet, path string) {
	removed, added := oldTypes&^newTypes, newTypes&^oldTypes
	// Null gets its own change when both sides name their types; going
	// from or to "any type" is one type change.
	apart := typeNull
	if oldTypes == allTypes || newTypes == allTypes {
		apart = 0
	}
	var eff effect
	if removed&^apart != 0 {
		eff |= narrows
	}
	if added&^apart != 0 {
		eff |= widens
	}
	if eff != 0 {
		c.record(path, KindTypeChanged, eff, "type changed from %s to %s", oldTypes, newTypes)
	}
	if removed&apart != 0 {
		c.record(path, KindNullableRemoved, narrows, "null no longer accepted")
	}
	if added&apart != 0 {
		c.record(path, KindNullableAdded, widens, "null now accepted")
	}
}

func (c *comparator) compareValueSets(o, n *jsonschema.Schema, oldValues, newValues *valueSet, path string) {
	if o.Constant != nil && n.Constant != nil && len(oldValues.keys) == 1 && len(newValues.keys) == 1 {
		if oldValues.keys[0] != newValues.keys[0] {
			c.record(joinPointer(path, "const"), KindConstChanged, narrows|widens,
				"const changed from %s to %s", firstDisplay(oldValues), firstDisplay(newValues))
		}
		return
	}
	keyword := "enum"
	if o.Enum == nil {
		keyword = "const"
	}
	enumPath := joinPointer(path, keyword)
	for _, key := range oldValues.keys {
		if !newValues.has(key) {
			c.record(enumPath, KindEnumValueRemoved, narrows, "enum value %s removed", oldValues.display[key])
		}
	}
	for _, key := range newValues.keys {
		if !oldValues.has(key) {
			c.record(enumPath, KindEnumValueAdded, widens, "enum value %s added", newValues.display[key])
		}
	}
}

// numberBound is one side of a numeric range.
type numberBound struct {
	value     *big.Rat
	exclusive bool
	keyword   string
}

func (b *numberBound) String() string {
	return formatRat(b.value)
}

// lowerBound picks the tighter of minimum and exclusiveMinimum.
func lowerBound(s *jsonschema.Schema) *numberBound {
	return pickBound(s.Minimum, s.ExclusiveMinimum, "minimum", "exclusiveMinimum", 1)
}

// upperBound picks the tighter of maximum and exclusiveMaximum.
func upperBound(s *jsonschema.Schema) *numberBound {
	return pickBound(s.Maximum, s.ExclusiveMaximum, "maximum", "exclusiveMaximum", -1)
}

// pickBound returns the tighter of an inclusive and an exclusive bound;
// sign is 1 for lower bounds (higher is tighter) and -1 for upper bounds.
func pickBound(inclusive, exclusive *big.Rat, inclusiveName, exclusiveName string, sign int) *numberBound {
	switch {
	case inclusive == nil && exclusive == nil:
		return nil
	case exclusive == nil:
		return &numberBound{inclusive, false, inclusiveName}
	case inclusive == nil:
		return &numberBound{exclusive, true, exclusiveName}
	case exclusive.Cmp(inclusive)*sign >= 0:
		return &numberBound{exclusive, true, exclusiveName}
	default:
		return &numberBound{inclusive, false, inclusiveName}
	}
}

// tighter compares two bounds of the same side: 1 when b is tighter than a,
// -1 when looser, 0 when equal. sign is 1 for lower bounds, -1 for upper.
func tighter(a, b *numberBound, sign int) int {
	if cmp := b.value.Cmp(a.value) * sign; cmp != 0 {
		return cmp
	}
	switch {
	case b.exclusive && !a.exclusive:
		return 1
	case a.exclusive && !b.exclusive:
		return -1
	}
	return 0
}

func describeBound(b *numberBound, sign int) string {
	switch {
	case sign > 0 && b.exclusive:
		return "> " + b.String()
	case sign > 0:
		return ">= " + b.String()
	case b.exclusive:
		return "< " + b.String()
	default:
		return "<= " + b.String()
	}
}

func (c *comparator) compareNumbers(o, n *jsonschema.Schema, path string) {
	c.compareNumberBound(lowerBound(o), lowerBound(n), 1, "lower", path)
	c.compareNumberBound(upperBound(o), upperBound(n), -1, "upper", path)
	c.compareMultipleOf(o.MultipleOf, n.MultipleOf, joinPointer(path, "multipleOf"))
}

func (c *comparator) compareNumberBound(oldBound, newBound *numberBound, sign int, side, path string) {
	switch {
	case oldBound == nil && newBound == nil:
	case oldBound == nil:
		c.record(joinPointer(path, newBound.keyword), KindBoundTightened, narrows,
			"%s bound %s added", side, describeBound(newBound, sign))
	case newBound == nil:
		c.record(joinPointer(path, oldBound.keyword), KindBoundLoosened, widens,
			"%s bound %s removed", side, describeBound(oldBound, sign))
	default:
		switch tighter(oldBound, newBound, sign) {
		case 1:
			c.record(joinPointer(path, oldBound.keyword), KindBoundTightened, narrows,
				"%s bound tightened from %s to %s", side, describeBound(oldBound, sign), describeBound(newBound, sign))
		case -1:
			c.record(joinPointer(path, oldBound.keyword), KindBoundLoosened, widens,
				"%s bound loosened from %s to %s", side, describeBound(oldBound, sign), describeBound(newBound, sign))
		}
	}
}

// isMultiple reports whether a is a whole multiple of b.
func isMultiple(a, b *big.Rat) bool {
	if b.Sign() == 0 {
		return false
	}
	return new(big.Rat).Quo(a, b).IsInt()
}

func (c *comparator) compareMultipleOf(oldFactor, newFactor *big.Rat, path string) {
	switch {
	case oldFactor == nil && newFactor == nil:
	case oldFactor == nil:
		c.record(path, KindMultipleOfChanged, narrows, "values must now be multiples of %s", formatRat(newFactor))
	case newFactor == nil:
		c.record(path, KindMultipleOfChanged, widens, "values need no longer be multiples of %s", formatRat(oldFactor))
	case oldFactor.Cmp(newFactor) != 0:
		var eff effect
		if !isMultiple(oldFactor, newFactor) {
			eff |= narrows
		}
		if !isMultiple(newFactor, oldFactor) {
			eff |= widens
		}
		c.record(path, KindMultipleOfChanged, eff, "multipleOf changed from %s to %s", formatRat(oldFactor), formatRat(newFactor))
	}
}

// compareCount compares integer bounds where -1 means none: lengths, item,
// property and contains counts. lower is true for minimums.
func (c *comparator) compareCount(oldCount, newCount int, lower bool, noun, path string) {
	if oldCount == newCount {
		return
	}
	word := "maximum"
	if lower {
		word = "minimum"
	}
	switch {
	case oldCount < 0:
		c.record(path, KindBoundTightened, narrows, "%s %s %d added", word, noun, newCount)
	case newCount < 0:
		c.record(path, KindBoundLoosened, widens, "%s %s %d removed", word, noun, oldCount)
	case (newCount > oldCount) == lower:
		c.record(path, KindBoundTightened, narrows, "%s %s tightened from %d to %d", word, noun, oldCount, newCount)
	default:
		c.record(path, KindBoundLoosened, widens, "%s %s loosened from %d to %d", word, noun, oldCount, newCount)
	}
}

// noneBelowOne maps a minimum of zero to "no minimum", which it means for
// lengths and counts.
func noneBelowOne(count int) int {
	if count <= 0 {
		return -1
	}
	return count
}

func (c *comparator) compareStrings(o, n *jsonschema.Schema, path string) {
	c.compareCount(noneBelowOne(o.MinLength), noneBelowOne(n.MinLength), true, "length", joinPointer(path, "minLength"))
	c.compareCount(o.MaxLength, n.MaxLength, false, "length", joinPointer(path, "maxLength"))

	patternPath := joinPointer(path, "pattern")
	switch {
	case o.Pattern == nil && n.Pattern == nil:
	case o.Pattern == nil:
		c.record(patternPath, KindPatternAdded, narrows, "strings must now match %q", n.Pattern.String())
	case n.Pattern == nil:
		c.record(patternPath, KindPatternRemoved, widens, "strings need no longer match %q", o.Pattern.String())
	case o.Pattern.String() != n.Pattern.String():
		c.record(patternPath, KindPatternChanged, narrows|widens,
			"pattern changed from %q to %q (two patterns cannot be compared, so this counts as breaking both ways)",
			o.Pattern.String(), n.Pattern.String())
	}

	formatPath := joinPointer(path, "format")
	switch {
	case o.Format == n.Format:
	case o.Format == "":
		c.record(formatPath, KindFormatAdded, narrows, "strings must now be in format %q", n.Format)
	case n.Format == "":
		c.record(formatPath, KindFormatRemoved, widens, "strings need no longer be in format %q", o.Format)
	default:
		c.record(formatPath, KindFormatChanged, narrows|widens,
			"format changed from %q to %q (two formats cannot be compared, so this counts as breaking both ways)",
			o.Format, n.Format)
	}

	c.compareContent(o.ContentEncoding, n.ContentEncoding, "contentEncoding", path)
	c.compareContent(o.ContentMediaType, n.ContentMediaType, "contentMediaType", path)
}

func (c *comparator) compareContent(oldValue, newValue, keyword, path string) {
	path = joinPointer(path, keyword)
	switch {
	case oldValue == newValue:
	case oldValue == "":
		c.record(path, KindContentChanged, narrows, "%s %q added", keyword, newValue)
	case newValue == "":
		c.record(path, KindContentChanged, widens, "%s %q removed", keyword, oldValue)
	default:
		c.record(path, KindContentChanged, narrows|widens, "%s changed from %q to %q", keyword, oldValue, newValue)
	}
}
