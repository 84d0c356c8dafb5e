package handshake

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/go-version"
)

// Server is what the deciding side knows of itself for one contract.
type Server struct {
	// Contract is the contract's declared model name.
	Contract string
	// Component is the server's component; it must be the contract's server.
	Component string
	// Client is the contract's client component: the only component allowed
	// to handshake.
	Client string
	// Release is the server binary's own version.
	Release string
	// Offers lists what the server can speak.
	Offers []Offer
	// PeerRelease optionally constrains the client's release.
	PeerRelease string
	// Draining is set while the server shuts down.
	Draining bool
}

// fingerprintPattern is the form every fingerprint takes on the wire.
var fingerprintPattern = regexp.MustCompile(`^lsfp1:[0-9a-f]{64}$`)

// Validate checks a hello's form: required fields, names that pass
// [CheckName], parseable versions,
// well-formed fingerprints, a parseable release constraint. A hello that fails
// is answered with invalid_argument.
func (h *Hello) Validate() error {
	var errs []error
	for _, f := range []struct{ what, value string }{
		{"contract", h.Contract}, {"component", h.Component}, {"instance", h.Instance},
	} {
		if err := CheckName(f.what, f.value); err != nil {
			errs = append(errs, err)
		}
	}
	if h.Release != "" {
		if err := CheckName("release", h.Release); err != nil {
			errs = append(errs, err)
		}
	}
	if len(h.PeerRelease) > MaxNameBytes {
		errs = append(errs, tooLong("peerRelease", len(h.PeerRelease)))
	}
	if len(h.Offers) == 0 {
		errs = append(errs, errors.New("offers must name at least one version"))
	}
	if err := ValidateOffers(h.Offers); err != nil {
		errs = append(errs, err)
	}
	if h.Release != "" && len(h.Release) <= MaxNameBytes {
		if _, err := version.NewVersion(h.Release); err != nil {
			errs = append(errs, fmt.Errorf("release %q is not a version: %w", h.Release, err))
		}
	}
	if h.PeerRelease != "" && len(h.PeerRelease) <= MaxNameBytes {
		if _, err := version.NewConstraint(h.PeerRelease); err != nil {
			errs = append(errs, fmt.Errorf("peerRelease %q is not a version constraint: %w", h.PeerRelease, err))
		}
	}
	return errors.Join(errs...)
}

// MaxOffers bounds how many versions one side may offer. A fork window keeps
// a handful of versions, so the bound is generous; it keeps validating and
// negotiating an untrusted hello cheap.
const MaxOffers = 64

// ValidateOffers checks that there are at most [MaxOffers] offers, that every
// offer has a parseable version and a well-formed fingerprint, and that no
// version is offered twice. Versions are compared as [Negotiate] compares
// them, so "2.0", "v2.0.0" and "2.0.0+build" are all the same version as
// "2.0.0".
func ValidateOffers(offers []Offer) error {
	if len(offers) > MaxOffers {
		return &overBound{fmt.Sprintf("offers: %d versions offered, at most %d allowed", len(offers), MaxOffers), ErrTooManyOffers}
	}
	var errs []error
	var seen []*version.Version
	for i, o := range offers {
		if len(o.Version) > MaxNameBytes {
			errs = append(errs, tooLong(fmt.Sprintf("offers[%d]: version", i), len(o.Version)))
			continue
		}
		v, err := version.NewVersion(o.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("offers[%d]: version %q is not a semantic version", i, o.Version))
			continue
		}
		if !fingerprintPattern.MatchString(o.Fingerprint) {
			errs = append(errs, fmt.Errorf("offers[%d]: fingerprint %q is not of the form lsfp1:<64 hex digits>", i, o.Fingerprint))
		}
		for _, earlier := range seen {
			if equalVersions(v, earlier) {
				errs = append(errs, fmt.Errorf("offers[%d]: version %s is offered twice", i, o.Version))
				break
			}
		}
		seen = append(seen, v)
	}
	return errors.Join(errs...)
}

// Negotiate decides a hello on the server's side. It returns the agreement,
// or a refusal saying why there is none. The hello must have passed
// [Hello.Validate] and name the server's contract; Negotiate checks, in order:
// draining, role, the server's constraint on the client's release, then the
// offers.
//
// The agreement is the highest version present in both offers with equal
// fingerprints, in the server's spelling ("2.0" and "2.0.0" are the same
// version). A shared version whose fingerprints differ is skipped; only when
// nothing is agreed does the highest such version become a
// [ReasonFingerprintMismatch] refusal naming both fingerprints. With no shared
// version at all the refusal is [ReasonVersionMismatch], and its message says
// which side to upgrade.
func Negotiate(s Server, h Hello) (Agreement, *Refusal) {
	refuse := func(code Code, reason Reason, msg string) (Agreement, *Refusal) {
		return Agreement{}, &Refusal{
			Code: code, Reason: reason, Contract: s.Contract, Message: msg,
			Server: SideInfo{Component: s.Component, Release: s.Release, Offers: s.Offers},
			Client: SideInfo{Component: h.Component, Release: h.Release, Offers: h.Offers},
		}
	}
	if s.Draining {
		return refuse(CodeIncompatiblePeer, ReasonDraining, fmt.Sprintf(
			"%s is draining and takes no new %s sessions: retry against another endpoint or its replacement",
			s.Component, s.Contract))
	}
	if h.Component != s.Client {
		return refuse(CodePermissionDenied, ReasonRoleMismatch, fmt.Sprintf(
			"%s is not a client of %s: only %s may call %s",
			h.Component, s.Contract, s.Client, s.Component))
	}
	if ok, msg := releaseSatisfies(h.Release, s.PeerRelease); !ok {
		return refuse(CodeIncompatiblePeer, ReasonReleaseConstraint, fmt.Sprintf(
			"%s requires %s release %s, but %s: run a %s release that satisfies it",
			s.Component, h.Component, s.PeerRelease, msg, h.Component))
	}
	agreement, mismatch, ok := match(s.Offers, h.Offers)
	if ok {
		return agreement, nil
	}
	if mismatch != nil {
		spelled := ""
		if mismatch.clientVersion != mismatch.serverVersion {
			spelled = fmt.Sprintf(" (%s spells it %s)", h.Component, mismatch.clientVersion)
		}
		return refuse(CodeIncompatiblePeer, ReasonFingerprintMismatch, fmt.Sprintf(
			"%s and %s both speak %s %s%s but with different messages (server fingerprint %s, client fingerprint %s): "+
				"one side changed the contract without bumping its version; regenerate both from the same contract or bump the version",
			s.Component, h.Component, s.Contract, mismatch.serverVersion, spelled, mismatch.server, mismatch.client))
	}
	return refuse(CodeIncompatiblePeer, ReasonVersionMismatch, versionAdvice(s.Contract, s.Component, s.Offers, h.Component, h.Offers))
}

// CheckWelcome is the client's half: it checks that the server's answer
// agrees with what the client offered, and applies the client's own
// constraint on the server's release. Offers are the client's.
func CheckWelcome(contract, component string, offers []Offer, peerRelease string, w Welcome) *Refusal {
	refuse := func(reason Reason, msg string) *Refusal {
		return &Refusal{
			Code: CodeIncompatiblePeer, Reason: reason, Contract: contract, Message: msg,
			Server: SideInfo{Component: w.Peer.Component, Release: w.Peer.Release,
				Offers: []Offer{{Version: w.Version, Fingerprint: w.Fingerprint}}},
			Client: SideInfo{Component: component, Offers: offers},
		}
	}
	var found *Offer
	for i := range offers {
		if !SameVersion(offers[i].Version, w.Version) {
			continue
		}
		if found == nil || offers[i].Fingerprint == w.Fingerprint {
			found = &offers[i]
		}
	}
	if found == nil {
		return refuse(ReasonVersionMismatch, fmt.Sprintf(
			"%s agreed %s %s, which %s never offered: the server is misbehaving",
			w.Peer.Component, contract, w.Version, component))
	}
	if found.Fingerprint != w.Fingerprint {
		return refuse(ReasonFingerprintMismatch, fmt.Sprintf(
			"%s agreed %s %s with fingerprint %s, but %s has %s: regenerate both from the same contract or bump the version",
			w.Peer.Component, contract, w.Version, w.Fingerprint, component, found.Fingerprint))
	}
	if ok, msg := releaseSatisfies(w.Peer.Release, peerRelease); !ok {
		return refuse(ReasonReleaseConstraint, fmt.Sprintf(
			"%s requires %s release %s, but %s: run a %s release that satisfies it",
			component, w.Peer.Component, peerRelease, msg, w.Peer.Component))
	}
	return nil
}

// releaseSatisfies reports whether release satisfies constraint; an empty
// constraint accepts anything. On failure it returns a clause for a message.
func releaseSatisfies(release, constraint string) (bool, string) {
	if constraint == "" {
		return true, ""
	}
	c, err := version.NewConstraint(constraint)
	if err != nil {
		return false, fmt.Sprintf("the constraint does not parse (%v)", err)
	}
	if release == "" {
		return false, "it reported no release"
	}
	v, err := version.NewVersion(release)
	if err != nil {
		return false, fmt.Sprintf("its release %q is not a version", release)
	}
	if !c.Check(v) {
		return false, fmt.Sprintf("it runs %s", release)
	}
	return true, ""
}

// fingerprintMismatch is a version both sides offer, with the fingerprint
// and spelling each gives it.
type fingerprintMismatch struct {
	serverVersion, clientVersion string
	server, client               string
}

// parsedOffer is an offer whose version parsed.
type parsedOffer struct {
	Offer
	version *version.Version
}

// parseOffers parses the versions of offers, dropping those that do not
// parse: they can match nothing.
func parseOffers(offers []Offer) []parsedOffer {
	parsed := make([]parsedOffer, 0, len(offers))
	for _, o := range offers {
		if v, err := version.NewVersion(o.Version); err == nil {
			parsed = append(parsed, parsedOffer{Offer: o, version: v})
		}
	}
	return parsed
}

// match finds the highest version in both offer lists whose fingerprints are
// equal, and agrees on the server's spelling of it. When none is found, it
// reports the highest common version whose fingerprints differ, if any.
func match(server, client []Offer) (Agreement, *fingerprintMismatch, bool) {
	var best, mismatchVersion *version.Version
	var agreement Agreement
	var mismatch *fingerprintMismatch
	clientOffers := parseOffers(client)
	for _, so := range parseOffers(server) {
		for _, co := range clientOffers {
			if !equalVersions(so.version, co.version) {
				continue
			}
			if so.Fingerprint != co.Fingerprint {
				if mismatchVersion == nil || so.version.GreaterThan(mismatchVersion) {
					mismatchVersion = so.version
					mismatch = &fingerprintMismatch{
						serverVersion: so.Version, clientVersion: co.Version,
						server: so.Fingerprint, client: co.Fingerprint,
					}
				}
				continue
			}
			if best == nil || so.version.GreaterThan(best) {
				best = so.version
				agreement = Agreement{Version: so.Version, Fingerprint: so.Fingerprint}
			}
		}
	}
	return agreement, mismatch, best != nil
}

// versionAdvice writes the version_mismatch sentence: who speaks what, and
// which side to upgrade.
func versionAdvice(contract, server string, serverOffers []Offer, client string, clientOffers []Offer) string {
	sMax, cMax := highest(serverOffers), highest(clientOffers)
	advice := fmt.Sprintf("upgrade one side so both speak the same %s version, or run one with fork mode", contract)
	switch {
	case sMax != nil && cMax != nil && sMax.LessThan(cMax):
		advice = fmt.Sprintf("upgrade %s or run %s with fork mode", server, client)
	case sMax != nil && cMax != nil && cMax.LessThan(sMax):
		advice = fmt.Sprintf("upgrade %s or run %s with fork mode", client, server)
	}
	speaks := fmt.Sprintf("speaks %s %s", contract, versionList(serverOffers))
	if len(serverOffers) == 0 {
		speaks = fmt.Sprintf("speaks no %s version", contract)
	}
	offers := "offers " + versionList(clientOffers)
	if len(clientOffers) == 0 {
		offers = "offers none"
	}
	return fmt.Sprintf("%s %s; %s %s: %s", server, speaks, client, offers, advice)
}

// highest returns the highest version among offers, nil when none parses.
func highest(offers []Offer) *version.Version {
	var best *version.Version
	for _, o := range offers {
		if v, err := version.NewVersion(o.Version); err == nil && (best == nil || v.GreaterThan(best)) {
			best = v
		}
	}
	return best
}

// versionList renders offers as "1.0.0", "2.0.0 and 1.0.0" or
// "3.0.0, 2.0.0 and 1.0.0", highest first.
func versionList(offers []Offer) string {
	vs := make([]string, len(offers))
	for i, o := range offers {
		vs[i] = o.Version
	}
	sort.SliceStable(vs, func(i, j int) bool {
		a, errA := version.NewVersion(vs[i])
		b, errB := version.NewVersion(vs[j])
		if errA != nil || errB != nil {
			return vs[i] > vs[j]
		}
		return a.GreaterThan(b)
	})
	if len(vs) <= 1 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " and " + vs[len(vs)-1]
}

// SameVersion reports whether two version strings name the same version as
// negotiation compares them: equal numeric segments ("2.0" is "2.0.0") and
// the same pre-release. Strings that do not parse must be identical.
func SameVersion(a, b string) bool {
	va, errA := version.NewVersion(a)
	vb, errB := version.NewVersion(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return equalVersions(va, vb)
}

// equalVersions is version equality for offers: equal numeric segments (a
// missing segment counts as zero) and the same pre-release; build metadata is
// ignored. It is go-version's Equal made an equivalence: on its own, Equal
// ignores the pre-release when the two versions have different numbers of
// segments, so "2.0.0.0-beta" would equal "2.0.0" but "2.0.0-beta" would not.
func equalVersions(a, b *version.Version) bool {
	return a.Prerelease() == b.Prerelease() && a.Equal(b)
}
