package diff

// Kind is a short machine word naming what sort of change a [Change] is,
// so that tools can filter or count changes without parsing messages. The
// set is closed: every change this package reports has one of the kinds
// below.
type Kind string

// Kinds of contract-level changes.
const (
	// KindContractRenamed: the contract's name changed; peers no longer
	// find each other. Breaking.
	KindContractRenamed Kind = "contract_renamed"
	// KindServerChanged: another component serves the contract. Breaking.
	KindServerChanged Kind = "server_changed"
	// KindClientChanged: another component calls the contract. Breaking.
	KindClientChanged Kind = "client_changed"
	// KindMethodAdded: a method exists only in the new version. Not breaking.
	KindMethodAdded Kind = "method_added"
	// KindMethodRemoved: a method exists only in the old version; old
	// clients still call it. Breaking.
	KindMethodRemoved Kind = "method_removed"
	// KindMessageRenamed: a method or topic now names another message. The
	// name is not on the wire, so only the two messages' contents decide
	// the verdict; the rename itself is not breaking.
	KindMessageRenamed Kind = "message_renamed"
	// KindMessageAdded: a method gained a request or response body it did
	// not have. Breaking.
	KindMessageAdded Kind = "message_added"
	// KindMessageRemoved: a method lost its request or response body.
	// Breaking.
	KindMessageRemoved Kind = "message_removed"
	// KindIdempotentAdded: a method became idempotent; new clients may
	// retry it. Not breaking.
	KindIdempotentAdded Kind = "idempotent_added"
	// KindIdempotentRemoved: a method is no longer idempotent, yet old
	// clients still retry it. Breaking.
	KindIdempotentRemoved Kind = "idempotent_removed"
	// KindBatchChanged: a method switched between batch and single form,
	// which changes both bodies on the wire. Breaking.
	KindBatchChanged Kind = "batch_changed"
	// KindPathChanged: a method's HTTP path changed; old peers use the old
	// one. Breaking.
	KindPathChanged Kind = "path_changed"
	// KindTopicAdded: a topic exists only in the new version. Not breaking.
	KindTopicAdded Kind = "topic_added"
	// KindTopicRemoved: a topic exists only in the old version. Breaking.
	KindTopicRemoved Kind = "topic_removed"
	// KindTopicKeyChanged: a topic's objects are keyed by another field.
	// Breaking.
	KindTopicKeyChanged Kind = "topic_key_changed"
	// KindTopicWriterChanged: the other side now writes a topic. Breaking.
	KindTopicWriterChanged Kind = "topic_writer_changed"
	// KindLostWriterChanged: a topic's lost-writer policy changed, so
	// watchers see other objects after a writer is lost. Breaking.
	KindLostWriterChanged Kind = "lost_writer_changed"
	// KindSelectorAdded: a topic's watchers may select on one more field.
	// Not breaking.
	KindSelectorAdded Kind = "selector_added"
	// KindSelectorRemoved: a field a watcher may select on is gone, so a
	// watch request that names it is refused. Breaking.
	KindSelectorRemoved Kind = "selector_removed"
)

// Kinds of changes inside a message schema. Whether one breaks depends on
// the direction the message flows (see [Direction]).
const (
	// KindNowForbidden: a place that accepted values now accepts none
	// (its schema became false).
	KindNowForbidden Kind = "now_forbidden"
	// KindNowAllowed: a place that accepted no value (schema false) now
	// accepts some.
	KindNowAllowed Kind = "now_allowed"
	// KindTypeChanged: the set of JSON types accepted changed, other than
	// null (integer→number widens, number→integer narrows).
	KindTypeChanged Kind = "type_changed"
	// KindNullableAdded: null is now accepted.
	KindNullableAdded Kind = "nullable_added"
	// KindNullableRemoved: null is no longer accepted.
	KindNullableRemoved Kind = "nullable_removed"
	// KindEnumAdded: an enum now restricts values that were free.
	KindEnumAdded Kind = "enum_added"
	// KindEnumRemoved: an enum that restricted values is gone.
	KindEnumRemoved Kind = "enum_removed"
	// KindEnumValueAdded: an enum accepts one more value.
	KindEnumValueAdded Kind = "enum_value_added"
	// KindEnumValueRemoved: an enum accepts one value less.
	KindEnumValueRemoved Kind = "enum_value_removed"
	// KindConstAdded: a const now fixes a value that was free.
	KindConstAdded Kind = "const_added"
	// KindConstRemoved: a const that fixed a value is gone.
	KindConstRemoved Kind = "const_removed"
	// KindConstChanged: a const fixes another value.
	KindConstChanged Kind = "const_changed"
	// KindBoundTightened: a minimum was raised or a maximum lowered (of a
	// number, a length, an item count, a property count or a contains
	// count), or such a bound was added.
	KindBoundTightened Kind = "bound_tightened"
	// KindBoundLoosened: a minimum was lowered or a maximum raised, or such
	// a bound was removed.
	KindBoundLoosened Kind = "bound_loosened"
	// KindMultipleOfChanged: multipleOf was added, removed or changed.
	KindMultipleOfChanged Kind = "multiple_of_changed"
	// KindPatternAdded: strings must now match a pattern.
	KindPatternAdded Kind = "pattern_added"
	// KindPatternRemoved: strings need no longer match a pattern.
	KindPatternRemoved Kind = "pattern_removed"
	// KindPatternChanged: strings must match another pattern. Two regular
	// expressions cannot be compared in general, so this counts as both
	// narrowing and widening.
	KindPatternChanged Kind = "pattern_changed"
	// KindFormatAdded: strings must now have a format.
	KindFormatAdded Kind = "format_added"
	// KindFormatRemoved: strings need no longer have a format.
	KindFormatRemoved Kind = "format_removed"
	// KindFormatChanged: strings must have another format; counted as both
	// narrowing and widening.
	KindFormatChanged Kind = "format_changed"
	// KindContentChanged: contentEncoding or contentMediaType was added,
	// removed or changed.
	KindContentChanged Kind = "content_changed"
	// KindUniqueItemsAdded: array items must now be unique.
	KindUniqueItemsAdded Kind = "unique_items_added"
	// KindUniqueItemsRemoved: array items need no longer be unique.
	KindUniqueItemsRemoved Kind = "unique_items_removed"
	// KindFieldAdded: an optional property was declared.
	KindFieldAdded Kind = "field_added"
	// KindRequiredFieldAdded: a required property was declared.
	KindRequiredFieldAdded Kind = "required_field_added"
	// KindFieldRemoved: a property is no longer declared.
	KindFieldRemoved Kind = "field_removed"
	// KindFieldRenamed: one property disappeared and one with the same
	// schema appeared in the same object. A peer on the other version sends
	// the value under a name this one ignores, so it always counts as
	// breaking.
	KindFieldRenamed Kind = "field_renamed"
	// KindFieldNowRequired: a declared property became required.
	KindFieldNowRequired Kind = "field_now_required"
	// KindFieldNowOptional: a declared property is no longer required.
	KindFieldNowOptional Kind = "field_now_optional"
	// KindAdditionalPropertiesTightened: properties the schema does not
	// declare are now rejected.
	KindAdditionalPropertiesTightened Kind = "additional_properties_tightened"
	// KindAdditionalPropertiesLoosened: properties the schema does not
	// declare were rejected and are now accepted.
	KindAdditionalPropertiesLoosened Kind = "additional_properties_loosened"
	// KindPatternPropertyAdded: a patternProperties entry was added.
	KindPatternPropertyAdded Kind = "pattern_property_added"
	// KindPatternPropertyRemoved: a patternProperties entry was removed.
	KindPatternPropertyRemoved Kind = "pattern_property_removed"
	// KindDependencyAdded: a property now requires another one with it.
	KindDependencyAdded Kind = "dependency_added"
	// KindDependencyRemoved: a property no longer requires another one.
	KindDependencyRemoved Kind = "dependency_removed"
	// KindAlternativeAdded: an anyOf or oneOf alternative was added.
	KindAlternativeAdded Kind = "alternative_added"
	// KindAlternativeRemoved: an anyOf or oneOf alternative was removed.
	KindAlternativeRemoved Kind = "alternative_removed"
	// KindOneOfOverlap: alternatives of a oneOf changed and may overlap,
	// so a value may now match two (and fail) or no longer match two (and
	// pass); it carries the effect opposite to the alternatives' change.
	KindOneOfOverlap Kind = "oneof_overlap"
	// KindCombinatorChanged: anyOf became oneOf or the reverse.
	KindCombinatorChanged Kind = "combinator_changed"
	// KindConstraintAdded: a subschema that every value must satisfy was
	// added (an allOf entry, a $ref beside other keywords, not, contains,
	// if/then/else, or an anyOf/oneOf where there was none).
	KindConstraintAdded Kind = "constraint_added"
	// KindConstraintRemoved: such a subschema was removed.
	KindConstraintRemoved Kind = "constraint_removed"
	// KindConditionChanged: the if of an if/then/else changed; which
	// branch applies to which value cannot be compared, so this counts as
	// both narrowing and widening.
	KindConditionChanged Kind = "condition_changed"
	// KindDefaultChanged: a default value was added, removed or changed.
	// Defaults are not written into decoded values, so this never breaks
	// the wire, but a peer that omits the property now gets another
	// meaning.
	KindDefaultChanged Kind = "default_changed"
	// KindTooComplex: the comparison stopped after its work limit; the
	// schemas are counted as breaking in every direction.
	KindTooComplex Kind = "too_complex"
)
