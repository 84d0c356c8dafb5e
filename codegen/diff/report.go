package diff

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Report is the result of comparing two versions of a contract: every
// change found, each classified as breaking or not, and whether the major
// version moved enough to allow the breaking ones.
type Report struct {
	// Contract is the contract's name (the new version's, if it changed).
	Contract string `json:"contract"`
	// OldVersion is the version compared from.
	OldVersion string `json:"oldVersion"`
	// NewVersion is the version compared to.
	NewVersion string `json:"newVersion"`
	// MajorBump is true when the new version's major number is greater
	// than the old one's, which allows breaking changes.
	MajorBump bool `json:"majorBump"`
	// SameVersion is true when both contracts carry the same version
	// string: then their fingerprints must be equal too, or peers built
	// from the two refuse each other with fingerprint_mismatch.
	SameVersion bool `json:"sameVersion,omitempty"`
	// OldFingerprint and NewFingerprint are the two contracts'
	// fingerprints (handshake.Fingerprint).
	OldFingerprint string `json:"oldFingerprint"`
	NewFingerprint string `json:"newFingerprint"`
	// Changes lists every change: contract-level ones first, then methods
	// and topics by name, each message's changes by path. Never nil.
	Changes []Change `json:"changes"`
}

// Change is one difference between two contract versions.
type Change struct {
	// Where names the part of the contract that changed: "contract",
	// "method ReportStatus", "method ReportStatus request", "topic
	// NodeHealth", "topic NodeHealth object". Empty in changes returned by
	// [Compatible], whose caller knows.
	Where string `json:"where"`
	// Path is a JSON pointer into the old version's message schema: the
	// keyword that changed, or where it would sit when only the new
	// version has it ("/properties/status/enum", "/$defs/Condition/type").
	// It is relative to the referenced definition when the change lies
	// behind a $ref, so a definition shared by many places is reported
	// once. Empty for changes outside message schemas.
	Path string `json:"path"`
	// Kind is a short machine word for the sort of change.
	Kind Kind `json:"kind"`
	// Breaking is true when an old client can no longer talk to a new
	// server: the order of an upgrade that moves servers first, and the
	// one a major version bump is about.
	Breaking bool `json:"breaking"`
	// BreaksNewClient is true when a new client can no longer talk to an
	// old server (a client upgraded first). A change breaking in neither
	// order is compatible both ways, and a contract whose changes all are
	// is forked for free by the generator (docs/evolving.md).
	BreaksNewClient bool `json:"breaksNewClient,omitempty"`
	// Dropped is true for an optional member added to an object that did
	// not allow it (field_added): it breaks a peer of the old version only
	// if the new version's value reaches it as it is, and the conversions
	// the generator writes for a version that derives from another
	// (forkFrom) drop it going down. Such a change needs no major version
	// and does not stop a version from being compatible both ways.
	Dropped bool `json:"dropped,omitempty"`
	// Message says in a sentence what changed and, when it breaks, why.
	Message string `json:"message"`
}

// ErrMajorBumpRequired is what [Report.Err] wraps when a contract changes in
// a breaking way without a new major version.
var ErrMajorBumpRequired = errors.New("breaking change without a major version bump")

// ErrVersionNotBumped is what [Report.Err] wraps when the two contracts
// carry the same version but different fingerprints: a change was made
// without a new version.
var ErrVersionNotBumped = errors.New("contract changed without a new version")

// Breaking reports whether any change is breaking, other than one a
// generated conversion absorbs ([Change.Dropped]).
func (r *Report) Breaking() bool {
	return r.breakingCount() > 0
}

func (r *Report) breakingCount() int {
	count := 0
	for _, change := range r.Changes {
		if change.Breaking && !change.Dropped {
			count++
		}
	}
	return count
}

// CompatibleBothWays reports whether no change breaks a peer in either
// order: old clients calling new servers, and new clients calling old
// servers. The generator forks such a version from the one it derives
// from by itself (docs/evolving.md).
func (r *Report) CompatibleBothWays() bool {
	for _, change := range r.Changes {
		if (change.Breaking || change.BreaksNewClient) && !change.Dropped {
			return false
		}
	}
	return true
}

// Err returns an error wrapping [ErrVersionNotBumped] when the contracts
// carry the same version with different fingerprints, one wrapping
// [ErrMajorBumpRequired] when the report has a breaking change and the new
// major version is not greater than the old one, and nil otherwise. Each
// says which version to bump. "lockstep-gen diff" exits non-zero on it.
func (r *Report) Err() error {
	count := r.breakingCount()
	if r.SameVersion && r.OldFingerprint != r.NewFingerprint {
		bump := "a new minor version"
		if count > 0 {
			bump = "a new major version"
		}
		return fmt.Errorf("contract %s %s: %w: its fingerprint changed from %s to %s, and peers built from the two would refuse each other with fingerprint_mismatch; bump the version (to %s, since %s)",
			r.Contract, r.NewVersion, ErrVersionNotBumped, r.OldFingerprint, r.NewFingerprint, bump, bumpReason(count))
	}
	if count == 0 || r.MajorBump {
		return nil
	}
	return fmt.Errorf("contract %s %s -> %s: %w (%s); bump the major version",
		r.Contract, r.OldVersion, r.NewVersion, ErrMajorBumpRequired, plural(count, "breaking change"))
}

// bumpReason says why a version bump is a major or a minor one.
func bumpReason(breaking int) string {
	if breaking > 0 {
		return plural(breaking, "change") + " break old clients"
	}
	return "no change breaks old clients"
}

// WriteText writes the report for a person: a summary line, then one line
// per change, those breaking old clients of a new server marked BREAKING,
// those breaking only new clients of an old server marked NEW→OLD, and
// members added that a generated conversion drops going down DROPPED.
//
//	nodestatus 2.0.0 -> 2.1.0: 2 changes, 1 breaking, major version not bumped
//	  BREAKING  method ReportStatus request #/required: field "node" is now required; old clients may omit it, and the new server rejects that [field_now_required]
//	            method Ping: method added [method_added]
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s -> %s: ", r.Contract, r.OldVersion, r.NewVersion)
	count := r.breakingCount()
	switch {
	case len(r.Changes) == 0:
		b.WriteString("no changes\n")
	default:
		fmt.Fprintf(&b, "%s, %d breaking", plural(len(r.Changes), "change"), count)
		switch {
		case count == 0:
		case r.MajorBump:
			b.WriteString(", major version bumped")
		default:
			b.WriteString(", major version not bumped")
		}
		if reverse := r.newClientBreakingCount(); reverse > 0 {
			fmt.Fprintf(&b, ", %d breaking new clients of old servers", reverse)
		} else if count == 0 {
			b.WriteString(", compatible both ways")
		}
		b.WriteByte('\n')
	}
	if r.SameVersion && r.OldFingerprint != r.NewFingerprint {
		fmt.Fprintf(&b, "  the fingerprint changed under version %s: bump it\n", r.NewVersion)
	}
	for _, change := range r.Changes {
		mark := "          "
		switch {
		case change.Dropped:
			mark = "DROPPED   "
		case change.Breaking:
			mark = "BREAKING  "
		case change.BreaksNewClient:
			mark = "NEW→OLD   "
		}
		b.WriteString("  ")
		b.WriteString(mark)
		b.WriteString(change.Where)
		if !contractKinds[change.Kind] {
			b.WriteString(" #")
			b.WriteString(change.Path)
		}
		fmt.Fprintf(&b, ": %s [%s]\n", change.Message, change.Kind)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// contractKinds are the kinds of changes outside message schemas, which
// carry no path.
var contractKinds = map[Kind]bool{
	KindContractRenamed: true, KindServerChanged: true, KindClientChanged: true,
	KindMethodAdded: true, KindMethodRemoved: true, KindMessageRenamed: true,
	KindMessageAdded: true, KindMessageRemoved: true, KindIdempotentAdded: true,
	KindIdempotentRemoved: true, KindBatchChanged: true, KindPathChanged: true,
	KindTopicAdded: true, KindTopicRemoved: true, KindTopicKeyChanged: true,
	KindTopicWriterChanged: true, KindLostWriterChanged: true,
}

func (r *Report) newClientBreakingCount() int {
	count := 0
	for _, change := range r.Changes {
		if change.BreaksNewClient && !change.Dropped {
			count++
		}
	}
	return count
}

func plural(count int, noun string) string {
	if count == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", count, noun)
}
