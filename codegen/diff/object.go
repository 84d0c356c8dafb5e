package diff

import (
	"regexp"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A property name is governed, in one schema, by exactly one slot: its
// entry in properties, else the patternProperties it matches, else the
// catch-all (additionalProperties, or unevaluatedProperties when that is
// all there is).
//
// A catch-all that accepts anything leaves the name undeclared. An
// undeclared name neither constrains nor is sent: generated code sends only
// the properties a schema declares, and accepts and ignores the others. So
// declaring an optional property, or dropping one, is not breaking by
// itself, while rejecting undeclared properties (additionalProperties
// false) is, since hand-written and pinned peers may send them.
//
// Inside "not" and "if" a schema is a predicate rather than the shape of a
// message, so there (in strict mode) an undeclared name means "any value".
type slot struct {
	schema     *jsonschema.Schema // nil when undeclared
	undeclared bool
}

func propertySlot(s *jsonschema.Schema, name string) slot {
	if schema, ok := s.Properties[name]; ok {
		return slot{schema: schema}
	}
	var matched []*jsonschema.Schema
	for _, entry := range sortedPatterns(s) {
		if entry.pattern.MatchString(name) {
			matched = append(matched, entry.schema)
		}
	}
	switch len(matched) {
	case 0:
		return catchAll(s)
	case 1:
		return slot{schema: matched[0]}
	}
	conjunction := *anything
	conjunction.AllOf = matched
	return slot{schema: &conjunction}
}

// catchAll returns the slot for names no property or pattern declares, and
// the keyword it comes from.
func catchAll(s *jsonschema.Schema) slot {
	switch additional := s.AdditionalProperties.(type) {
	case bool:
		if !additional {
			return slot{schema: nothing}
		}
		return slot{undeclared: true}
	case *jsonschema.Schema:
		if trivialAdditional(additional) {
			return slot{undeclared: true}
		}
		return slot{schema: additional}
	}
	if s.UnevaluatedProperties != nil && !trivialAdditional(s.UnevaluatedProperties) {
		return slot{schema: s.UnevaluatedProperties}
	}
	return slot{undeclared: true}
}

func catchAllKeyword(o, n *jsonschema.Schema) string {
	if o.AdditionalProperties == nil && o.UnevaluatedProperties != nil ||
		o.AdditionalProperties == nil && n.AdditionalProperties == nil && n.UnevaluatedProperties != nil {
		return "unevaluatedProperties"
	}
	return "additionalProperties"
}

type patternEntry struct {
	pattern *regexp.Regexp
	schema  *jsonschema.Schema
}

func sortedPatterns(s *jsonschema.Schema) []patternEntry {
	entries := make([]patternEntry, 0, len(s.PatternProperties))
	for pattern, schema := range s.PatternProperties {
		entries = append(entries, patternEntry{pattern, schema})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].pattern.String() < entries[j].pattern.String() })
	return entries
}

// fieldChange is a property declared on one side only.
type fieldChange struct {
	name            string
	schema          *jsonschema.Schema
	required        bool // required on its own side
	otherRequired   bool // required on the other side although not declared there
	renamedTo       string
	renamedFromPair bool
}

func (c *comparator) compareObjects(o, n *jsonschema.Schema, path string) {
	oldRequired, newRequired := stringSet(o.Required), stringSet(n.Required)
	var removed, added []*fieldChange
	for _, name := range propertyNames(o, n) {
		oldSchema, inOld := o.Properties[name]
		newSchema, inNew := n.Properties[name]
		switch {
		case inOld && inNew:
			c.compare(oldSchema, newSchema, joinPointer(path, "properties", name))
			c.compareRequired(name, oldRequired[name], newRequired[name], path)
		case inOld:
			removed = append(removed, &fieldChange{name: name, schema: oldSchema, required: oldRequired[name], otherRequired: newRequired[name]})
		case inNew:
			added = append(added, &fieldChange{name: name, schema: newSchema, required: newRequired[name], otherRequired: oldRequired[name]})
		default:
			c.compareRequired(name, oldRequired[name], newRequired[name], path)
		}
	}
	c.findRenames(removed, added, path)
	for _, field := range removed {
		c.fieldRemoved(n, field, path)
	}
	for _, field := range added {
		c.fieldAdded(o, field, path)
	}
	c.compareCatchAll(o, n, path)
	c.comparePatternProperties(o, n, path)
	c.compareSub(o.PropertyNames, n.PropertyNames, joinPointer(path, "propertyNames"))
	c.compareCount(noneBelowOne(o.MinProperties), noneBelowOne(n.MinProperties), true, "property count", joinPointer(path, "minProperties"))
	c.compareCount(o.MaxProperties, n.MaxProperties, false, "property count", joinPointer(path, "maxProperties"))
	c.compareDependencies(o, n, path)
}

// propertyNames lists, sorted, every name either side declares or requires.
func propertyNames(o, n *jsonschema.Schema) []string {
	set := map[string]bool{}
	for name := range o.Properties {
		set[name] = true
	}
	for name := range n.Properties {
		set[name] = true
	}
	for _, name := range o.Required {
		set[name] = true
	}
	for _, name := range n.Required {
		set[name] = true
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func stringSet(values []string) map[string]bool {
	set := make(map[string]bool, len(values))
	for _, value := range values {
		set[value] = true
	}
	return set
}

func (c *comparator) compareRequired(name string, oldRequired, newRequired bool, path string) {
	path = joinPointer(path, "required")
	switch {
	case !oldRequired && newRequired:
		c.recordWhy(path, KindFieldNowRequired, narrows, omittedByClients, "field %q is now required", name)
	case oldRequired && !newRequired:
		c.recordWhy(path, KindFieldNowOptional, widens, omittedByServer, "field %q is no longer required", name)
	}
}

// Explanations of breaking changes to requiredness.
const (
	omittedByClients = "old clients may omit it, and the new server rejects that"
	omittedByServer  = "the new server may omit it, and old clients require it"
)

// maxRenamePairs bounds the removed×added pairs examined for renames.
const maxRenamePairs = 400

// findRenames pairs a removed field with an added one when each is the
// other's only candidate with the same schema and the same requiredness.
func (c *comparator) findRenames(removed, added []*fieldChange, path string) {
	if len(removed) == 0 || len(added) == 0 || len(removed)*len(added) > maxRenamePairs {
		return
	}
	candidates := make([][]int, len(removed))
	addedCount := make([]int, len(added))
	for i, r := range removed {
		for j, a := range added {
			if r.required == a.required && c.sameOnWire(r.schema, a.schema) {
				candidates[i] = append(candidates[i], j)
				addedCount[j]++
			}
		}
	}
	for i, r := range removed {
		if len(candidates[i]) != 1 || addedCount[candidates[i][0]] != 1 {
			continue
		}
		a := added[candidates[i][0]]
		r.renamedTo = a.name
		a.renamedFromPair = true
		c.compare(r.schema, a.schema, joinPointer(path, "properties", r.name))
		c.recordWhy(joinPointer(path, "properties", r.name), KindFieldRenamed, narrows|widens,
			"a peer on the other version sends the value under a name this one ignores",
			"field %q renamed to %q (same schema)", r.name, a.name)
	}
}

func (c *comparator) fieldRemoved(n *jsonschema.Schema, field *fieldChange, path string) {
	if field.renamedTo != "" {
		return
	}
	fieldPath := joinPointer(path, "properties", field.name)
	var eff effect
	if field.required && !field.otherRequired {
		eff |= widens
	}
	target := propertySlot(n, field.name)
	switch {
	case target.undeclared && (field.otherRequired || c.strict):
		// Still required, so the new side sends it, now with any value (or
		// the schema is a predicate, where undeclared means anything).
		c.compare(field.schema, anything, fieldPath)
	case target.undeclared:
	case isFalse(target.schema):
		eff |= narrows
	default:
		c.compare(field.schema, target.schema, fieldPath)
	}
	what, why := "field %q removed", ""
	if field.required {
		what = "required field %q removed"
		if eff == widens {
			why = omittedByServer
		}
	}
	c.recordWhy(fieldPath, KindFieldRemoved, eff, why, what, field.name)
}

func (c *comparator) fieldAdded(o *jsonschema.Schema, field *fieldChange, path string) {
	if field.renamedFromPair {
		return
	}
	fieldPath := joinPointer(path, "properties", field.name)
	kind, what, why := KindFieldAdded, "field %q added", ""
	var eff effect
	if field.required {
		kind, what = KindRequiredFieldAdded, "required field %q added"
		if !field.otherRequired {
			eff |= narrows
			why = omittedByClients
		}
	}
	source := propertySlot(o, field.name)
	switch {
	case source.undeclared && (field.otherRequired || c.strict):
		// Required before, so the old side sent it, with any value (or the
		// schema is a predicate, where undeclared means anything).
		c.compare(anything, field.schema, fieldPath)
	case source.undeclared:
	case isFalse(source.schema):
		eff |= widens
		why = ""
	default:
		c.compare(source.schema, field.schema, fieldPath)
	}
	c.recordWhy(fieldPath, kind, eff, why, what, field.name)
}

func (c *comparator) compareCatchAll(o, n *jsonschema.Schema, path string) {
	oldSlot, newSlot := catchAll(o), catchAll(n)
	path = joinPointer(path, catchAllKeyword(o, n))
	oldFalse, newFalse := isFalse(oldSlot.schema), isFalse(newSlot.schema)
	switch {
	case oldSlot.undeclared && newSlot.undeclared, oldFalse && newFalse:
	case newFalse:
		c.record(path, KindAdditionalPropertiesTightened, narrows, "properties the schema does not declare are now rejected")
	case oldFalse:
		c.record(path, KindAdditionalPropertiesLoosened, widens, "properties the schema does not declare were rejected and are now accepted")
	default:
		c.compare(orAnything(oldSlot.schema), orAnything(newSlot.schema), path)
	}
}

func (c *comparator) comparePatternProperties(o, n *jsonschema.Schema, path string) {
	oldEntries, newEntries := sortedPatterns(o), sortedPatterns(n)
	oldByPattern := map[string]*jsonschema.Schema{}
	for _, entry := range oldEntries {
		oldByPattern[entry.pattern.String()] = entry.schema
	}
	newByPattern := map[string]*jsonschema.Schema{}
	for _, entry := range newEntries {
		newByPattern[entry.pattern.String()] = entry.schema
	}
	for _, entry := range oldEntries {
		pattern := entry.pattern.String()
		entryPath := joinPointer(path, "patternProperties", pattern)
		if newSchema, ok := newByPattern[pattern]; ok {
			c.compare(entry.schema, newSchema, entryPath)
			continue
		}
		var eff effect
		switch target := catchAll(n); {
		case target.undeclared && c.strict:
			c.compare(entry.schema, anything, entryPath)
		case target.undeclared:
		case isFalse(target.schema):
			eff = narrows
		default:
			c.compare(entry.schema, target.schema, entryPath)
		}
		c.record(entryPath, KindPatternPropertyRemoved, eff, "properties matching %q are no longer declared", pattern)
	}
	for _, entry := range newEntries {
		pattern := entry.pattern.String()
		if _, ok := oldByPattern[pattern]; ok {
			continue
		}
		entryPath := joinPointer(path, "patternProperties", pattern)
		var eff effect
		switch source := catchAll(o); {
		case source.undeclared && c.strict:
			c.compare(anything, entry.schema, entryPath)
		case source.undeclared:
		case isFalse(source.schema):
			eff = widens
		default:
			c.compare(source.schema, entry.schema, entryPath)
		}
		c.record(entryPath, KindPatternPropertyAdded, eff, "properties matching %q are now declared", pattern)
	}
}

// dependencies returns a schema's dependentRequired and dependentSchemas,
// folding in draft-7 "dependencies", and the keyword each came from.
func dependencies(s *jsonschema.Schema) (map[string][]string, map[string]*jsonschema.Schema) {
	required := map[string][]string{}
	schemas := map[string]*jsonschema.Schema{}
	for name, list := range s.DependentRequired {
		required[name] = list
	}
	for name, schema := range s.DependentSchemas {
		schemas[name] = schema
	}
	for name, value := range s.Dependencies {
		switch v := value.(type) {
		case []string:
			required[name] = append(required[name], v...)
		case *jsonschema.Schema:
			schemas[name] = v
		}
	}
	return required, schemas
}

func (c *comparator) compareDependencies(o, n *jsonschema.Schema, path string) {
	oldRequired, oldSchemas := dependencies(o)
	newRequired, newSchemas := dependencies(n)
	keyword := func(kind string, name string) string {
		if _, ok := o.Dependencies[name]; ok {
			return "dependencies"
		}
		if _, ok := n.Dependencies[name]; ok && len(o.DependentRequired) == 0 && len(o.DependentSchemas) == 0 {
			return "dependencies"
		}
		return kind
	}
	for _, name := range unionKeys(oldRequired, newRequired) {
		depPath := joinPointer(path, keyword("dependentRequired", name), name)
		oldSet, newSet := stringSet(oldRequired[name]), stringSet(newRequired[name])
		for _, other := range sortedKeys(newSet) {
			if !oldSet[other] {
				c.record(depPath, KindDependencyAdded, narrows, "when %q is present, %q is now required too", name, other)
			}
		}
		for _, other := range sortedKeys(oldSet) {
			if !newSet[other] {
				c.record(depPath, KindDependencyRemoved, widens, "when %q is present, %q is no longer required", name, other)
			}
		}
	}
	for _, name := range unionKeys(oldSchemas, newSchemas) {
		c.compareSub(oldSchemas[name], newSchemas[name], joinPointer(path, keyword("dependentSchemas", name), name))
	}
}

func unionKeys[V any](a, b map[string]V) []string {
	set := map[string]bool{}
	for key := range a {
		set[key] = true
	}
	for key := range b {
		set[key] = true
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for key := range set {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
