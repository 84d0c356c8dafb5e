// Package diff finds the changes between two versions of a contract that
// break a peer on the wire, for "lockstep-gen diff OLD NEW" and for the
// generator, which uses the same analysis to decide which fork-mode
// conversions are the identity.
//
// [Compare] takes two [handshake.Contract] values and returns a [Report]:
// every change, each marked breaking or not, and whether the major version
// was bumped; [Report.Err] fails when a breaking change comes without one.
// [Compatible] compares two versions of a single message schema for a
// given [Direction].
//
// # What breaks
//
// A message schema is read as the set of JSON values it accepts. Where a
// message flows decides which changes to that set break a peer:
//
//   - client→server ([Request]: method requests, topics the client writes):
//     the new server must accept everything an old client may send, so a
//     change that narrows the set breaks and one that widens it does not;
//   - server→client ([Response]: method responses, topics the server
//     writes): old clients must accept everything the new server may send,
//     so widening breaks and narrowing does not;
//   - a message used both ways is checked once per use, so any change in
//     either direction breaks one of them ([Both] does the same for
//     [Compatible]).
//
// The comparison is structural, keyword by keyword, after following $ref
// (recursion is guarded; each pair of subschemas is compared once). Every
// keyword that validation applies is covered: type (integer and number kept
// apart, null separately), enum and const, numeric bounds and multipleOf,
// lengths, pattern, format, content, items in every draft's spelling
// (prefixItems, items arrays and additionalItems), item counts,
// uniqueItems, contains, properties and required, additionalProperties
// (true, false or a schema), patternProperties, propertyNames, property
// counts, dependencies, allOf, anyOf, oneOf, not, if/then/else and the
// unevaluated keywords. Keywords for a JSON type that one side does not
// accept at all are skipped: the type change already says it.
//
// # Decisions worth knowing
//
// Undeclared properties. Generated code sends only the properties a schema
// declares and ignores others it receives. So adding an optional property,
// or removing one, breaks nobody by itself where the other side leaves
// unknown properties free; it does where the other side's
// additionalProperties is false (or constrains them). Rejecting unknown
// properties that were accepted (additionalProperties becoming false) is
// breaking for requests, since hand-written and pinned peers may send them.
//
// Renames. A property removed and another added in the same object with
// the same schema is reported as one rename, breaking in every direction:
// it is valid JSON both ways, but each version ignores the other's name.
//
// Undecidable changes count as breaking. Two different patterns or
// formats, a changed if condition, or a oneOf whose alternatives may
// overlap are reported as both narrowing and widening, with a message that
// says the comparison could not be precise. Lists of alternatives (allOf,
// anyOf, oneOf) are paired member by member: first members that accept the
// same values, then by discriminator (a required property with one allowed
// value), by referenced definition, by accepted types, and by position when
// as many remain on each side; members left over were added or removed.
// A schema restructured between allOf and inline keywords is therefore
// reported conservatively, as constraints added and removed.
//
// Finite sets of values (enum, const) are checked exactly: each value one
// side allows is validated against the other side's schema, so an enum
// value that a keyword beside the enum now rejects is still caught.
//
// Defaults are reported (a peer that omits a property gets another
// meaning) but never breaking, since they are not written into decoded
// values. Annotations are ignored. $dynamicRef and $recursiveRef are
// followed to the target they have without dynamic scope.
//
// Schemas are compiled and meta-validated with
// github.com/santhosh-tekuri/jsonschema/v5 under the generator's settings
// (2020-12 unless $schema names draft 4, 6, 7 or 2019-09; format assertions
// on), so both read a schema the same way. A reference outside the message
// document is an error: contracts bundle referenced files into each
// message. The work of one comparison is bounded; beyond the bound the
// result is a single breaking change of kind [KindTooComplex].
package diff
