package diff

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Direction says which way a message flows between the two versions being
// compared, and so which changes break a peer.
type Direction int

const (
	// Request is data flowing client→server: method requests and topics the
	// client writes. The new version must accept everything the old one
	// could send, so narrowing breaks and widening does not.
	Request Direction = iota + 1
	// Response is data flowing server→client: method responses and topics
	// the server writes. The new version must send nothing the old one
	// would reject, so widening breaks and narrowing does not.
	Response
	// Both is a message that flows both ways: any narrowing or widening
	// breaks.
	Both
)

// String returns "request", "response" or "both".
func (d Direction) String() string {
	switch d {
	case Request:
		return "request"
	case Response:
		return "response"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

func (d Direction) valid() bool { return d == Request || d == Response || d == Both }

// reverse is the direction the same data flows in when the peers' versions
// are swapped (a new client calling an old server): what the new version
// sends, the old one receives.
func (d Direction) reverse() Direction {
	switch d {
	case Request:
		return Response
	case Response:
		return Request
	}
	return d
}

// Compatible compares two versions of one message schema (each a
// self-contained JSON Schema document, as in handshake.Contract.Schemas)
// for a message flowing in direction dir, and returns every difference
// that matters on the wire, each marked breaking or not for that
// direction. Annotations (title, description, examples, $comment) are not
// compared; a changed default is reported but never breaking.
//
// The generator uses it to decide conversions between the types two
// contract versions generate for the same message:
//   - no change at all: both versions describe the same wire form, and the
//     conversion is the identity;
//   - changes, none breaking for dir: every value the sending version
//     produces is valid for the receiving one, so the conversion may
//     re-encode without loss of validity (fields one side lacks are dropped
//     or left absent);
//   - any breaking change: a hand-written conversion is needed.
//
// Where a difference cannot be decided (two regular expressions, two
// formats, a changed if condition), it is reported as breaking in every
// direction with a message that says so. Invalid JSON, a schema that fails
// meta-validation, and a $ref to anything outside the document are errors.
func Compatible(oldSchema, newSchema json.RawMessage, dir Direction) ([]Change, error) {
	return CompatibleAt(oldSchema, "", newSchema, "", dir)
}

// CompatibleAt is [Compatible] for one subschema of each document, named by
// a JSON pointer ("" for the whole document, "/$defs/Condition" for a
// bundled definition). References inside the subschemas resolve against
// their whole documents, so the generator can compare the named types
// nested in a message one by one.
func CompatibleAt(oldSchema json.RawMessage, oldPointer string, newSchema json.RawMessage, newPointer string, dir Direction) ([]Change, error) {
	if !dir.valid() {
		return nil, fmt.Errorf("diff: unknown direction %d", int(dir))
	}
	oldCompiled, err := compileSchema(oldSchema, oldDocument, oldPointer)
	if err != nil {
		return nil, fmt.Errorf("diff: old schema: %w", err)
	}
	newCompiled, err := compileSchema(newSchema, newDocument, newPointer)
	if err != nil {
		return nil, fmt.Errorf("diff: new schema: %w", err)
	}
	return compareCompiled(oldCompiled, newCompiled, oldPointer, dir, maxSteps), nil
}

// compareCompiled runs the comparison of two compiled schemas, visiting at
// most steps pairs of subschemas, and turns its findings into changes for
// direction dir.
func compareCompiled(oldSchema, newSchema *jsonschema.Schema, rootPath string, dir Direction, steps int) []Change {
	c := runComparison(oldSchema, newSchema, rootPath, &budget{left: steps}, map[sameKey]bool{}, false)
	if c.budget.exhausted {
		c.record(rootPath, KindTooComplex, narrows|widens,
			"the comparison stopped after %d steps; the schemas are too large or too recursive to compare fully", steps)
	}
	findings := c.findings
	sort.SliceStable(findings, func(i, j int) bool { return findings[i].path < findings[j].path })
	changes := make([]Change, 0, len(findings))
	for _, f := range findings {
		changes = append(changes, f.change(dir))
	}
	return changes
}

// effect records how a change moves the set of values on the wire.
type effect uint8

const (
	// narrows: the new version rejects some value the old one could send.
	// Breaks data flowing client→server.
	narrows effect = 1 << iota
	// widens: the new version may send some value the old one rejects.
	// Breaks data flowing server→client.
	widens
)

// flip swaps narrowing and widening, for changes found inside a "not".
func (e effect) flip() effect {
	var flipped effect
	if e&narrows != 0 {
		flipped |= widens
	}
	if e&widens != 0 {
		flipped |= narrows
	}
	return flipped
}

// breaks reports whether a change with this effect breaks a peer for a
// message flowing in direction dir.
func (e effect) breaks(dir Direction) bool {
	switch dir {
	case Request:
		return e&narrows != 0
	case Response:
		return e&widens != 0
	default:
		return e != 0
	}
}

// finding is one difference found between two schemas, before a direction
// decides whether it breaks.
type finding struct {
	path string // JSON pointer into the old document (or where it would be)
	kind Kind
	eff  effect
	what string // what changed, as a clause
	why  string // overrides the generic explanation of a breaking change
}

func (f finding) change(dir Direction) Change {
	change := Change{Path: f.path, Kind: f.kind, Breaking: f.eff.breaks(dir), BreaksNewClient: f.eff.breaks(dir.reverse()), Message: f.what}
	if change.Breaking {
		why := f.why
		if why == "" {
			why = explain(f.eff, dir)
		}
		change.Message += "; " + why
	}
	if change.BreaksNewClient && !change.Breaking {
		change.Message += "; " + explainReverse(f.eff, dir)
	}
	if f.kind == KindFieldAdded && (change.Breaking || change.BreaksNewClient) {
		// Only widening records it: the object did not allow the member.
		change.Dropped = true
		change.Message += ", unless it is dropped going down, as the conversions generated for a version that derives from the other (forkFrom) do"
	}
	return change
}

// explainReverse says in words why a change with effect eff breaks a new
// client calling an old server, for data the forward order sees flowing
// in direction dir.
func explainReverse(eff effect, dir Direction) string {
	const (
		widening  = "new clients may send values old servers reject"
		narrowing = "old servers may send values new clients reject"
	)
	switch {
	case dir == Request || eff == widens:
		return widening
	case dir == Response || eff == narrows:
		return narrowing
	default:
		return widening + ", and " + narrowing
	}
}

// explain says in words why a change with effect eff breaks a peer for
// direction dir.
func explain(eff effect, dir Direction) string {
	const (
		narrowing = "old clients may send values the new server rejects"
		widening  = "the new server may send values old clients reject"
	)
	switch {
	case dir == Request || eff == narrows:
		return narrowing
	case dir == Response || eff == widens:
		return widening
	default:
		return narrowing + ", and " + widening
	}
}
