package diff

import (
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// arrayShape is what an array schema says about its items in any draft:
// schemas for the first positions (a tuple), and one for the rest.
type arrayShape struct {
	prefix        []*jsonschema.Schema
	prefixKeyword string             // "prefixItems" (2020-12) or "items" (earlier drafts)
	rest          *jsonschema.Schema // nil: any value
	restKeyword   string             // "items" or "additionalItems"
}

func shapeOf(s *jsonschema.Schema) arrayShape {
	shape := arrayShape{prefixKeyword: "prefixItems", restKeyword: "items"}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		shape.rest = items
	case []*jsonschema.Schema:
		shape.prefix, shape.prefixKeyword, shape.restKeyword = items, "items", "additionalItems"
		switch additional := s.AdditionalItems.(type) {
		case bool:
			if !additional {
				shape.rest = nothing
			}
		case *jsonschema.Schema:
			shape.rest = additional
		}
	}
	if len(s.PrefixItems) > 0 {
		shape.prefix = s.PrefixItems
	}
	if s.Items2020 != nil {
		shape.rest = s.Items2020
	}
	return shape
}

// at returns the schema for position i (nil: any value).
func (a arrayShape) at(i int) *jsonschema.Schema {
	if i < len(a.prefix) {
		return a.prefix[i]
	}
	return a.rest
}

func (c *comparator) compareArrays(o, n *jsonschema.Schema, path string) {
	oldShape, newShape := shapeOf(o), shapeOf(n)
	positions := max(len(oldShape.prefix), len(newShape.prefix))
	for i := range positions {
		oldItem, newItem := oldShape.at(i), newShape.at(i)
		if oldItem == nil && newItem == nil {
			continue
		}
		keyword := newShape.prefixKeyword
		if i < len(oldShape.prefix) || len(newShape.prefix) == 0 {
			keyword = oldShape.prefixKeyword
		}
		c.compare(oldItem, newItem, joinPointer(path, keyword, strconv.Itoa(i)))
	}
	if oldShape.rest != nil || newShape.rest != nil {
		keyword := oldShape.restKeyword
		if oldShape.rest == nil {
			keyword = newShape.restKeyword
		}
		c.compare(oldShape.rest, newShape.rest, joinPointer(path, keyword))
	}

	c.compareCount(noneBelowOne(o.MinItems), noneBelowOne(n.MinItems), true, "item count", joinPointer(path, "minItems"))
	c.compareCount(o.MaxItems, n.MaxItems, false, "item count", joinPointer(path, "maxItems"))
	uniquePath := joinPointer(path, "uniqueItems")
	switch {
	case !o.UniqueItems && n.UniqueItems:
		c.record(uniquePath, KindUniqueItemsAdded, narrows, "items must now be unique")
	case o.UniqueItems && !n.UniqueItems:
		c.record(uniquePath, KindUniqueItemsRemoved, widens, "items need no longer be unique")
	}

	containsPath := joinPointer(path, "contains")
	switch {
	case o.Contains == nil && n.Contains == nil:
	case o.Contains == nil:
		c.record(containsPath, KindConstraintAdded, narrows, "arrays must now contain a matching item")
	case n.Contains == nil:
		c.record(containsPath, KindConstraintRemoved, widens, "arrays need no longer contain a matching item")
	default:
		c.compare(o.Contains, n.Contains, containsPath)
		c.compareCount(o.MinContains, n.MinContains, true, "contains count", joinPointer(path, "minContains"))
		c.compareCount(o.MaxContains, n.MaxContains, false, "contains count", joinPointer(path, "maxContains"))
	}
	c.compareSub(o.UnevaluatedItems, n.UnevaluatedItems, joinPointer(path, "unevaluatedItems"))
}
