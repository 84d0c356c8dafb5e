package gomodel

import (
	"fmt"
	"strings"

	"github.com/lockstep-dev/lockstep/codegen/diff"
	"github.com/lockstep-dev/lockstep/handshake"
)

// DecideCompatible decides whether the fork is a compatible version, which
// costs nothing: codegen/diff finds no change that breaks a peer in either
// order (old client and new server, new client and old server), every
// conversion the package has is generated whole, and the earlier version
// has no topic its clients write (the runtime converts only those the
// server writes). One kind of change is not held against it: an optional
// member added to an object that did not allow it (field_added with
// additionalProperties false), which breaks a peer only when the new
// version's value reaches the old one as it is; every session speaks one
// version, and the generated conversion going down drops the member, so
// the old version never sees it. Such a conversion is generated whole. Then the package's contract carries the conversions
// (framework.MustCompatibleContract), its Register serves the earlier
// version too and its clients offer it, with no fork mode. Otherwise
// [Fork.NotCompatible] says why, and the fork is opt-in as before.
//
// It must follow [Fork.DecideConversions], which decides the conversions
// of the topics' objects going up (a client in fork mode and a compatible
// version's clients both convert them).
func (f *Fork) DecideCompatible(cur *Package) error {
	f.Compatible, f.NotCompatible = false, ""
	oldModel, curModel := f.Old.Contract.Handshake(), cur.Contract.Handshake()
	report, err := diff.Compare(&oldModel, &curModel)
	if err != nil {
		return fmt.Errorf("lockstep-gen: comparing %s with %s: %w", cur.Contract.Version, f.Old.Contract.Version, err)
	}
	for _, c := range report.Changes {
		if (c.Breaking || c.BreaksNewClient) && !c.Dropped {
			f.NotCompatible = strings.TrimSpace(c.Where+" "+c.Path) + ": " + c.Message
			return nil
		}
	}
	for _, t := range f.Old.Contract.Topics {
		if t.Writer != handshake.RoleServer {
			f.NotCompatible = fmt.Sprintf("topic %s is written by clients, and the runtime converts only topics the server writes", t.Name)
			return nil
		}
	}
	// What is decided here beyond DecideConversions (the topics' objects
	// going up are decided there already, fork mode's clients converting
	// them too) is taken back when the fork is not free, so that fork
	// mode asks for no conversion it never calls.
	decided := len(f.Conversions)
	undo := func(why string) error {
		for _, c := range f.Conversions[decided:] {
			delete(f.byName, c.Name)
		}
		f.Conversions = f.Conversions[:decided]
		f.NotCompatible = why
		return nil
	}
	_, topics := f.Shared(cur)
	for _, tp := range topics {
		from, to := RootType(f.Old.Messages[tp.Old.Object]), RootType(cur.Messages[tp.Cur.Object])
		if from == nil || to == nil {
			return undo(fmt.Sprintf("topic %s: its object is not a message type of the package on both sides", tp.Cur.Name))
		}
		f.Conversion(cur, from, to, true)
	}
	for i := 0; i < len(f.Conversions); i++ {
		f.nested(cur, f.Conversions[i])
	}
	var dropping []*Conversion
	for _, c := range f.Conversions {
		if c.Compatible {
			continue
		}
		if why := f.compatibleDropping(c); why != "" {
			return undo(fmt.Sprintf("%s is written by hand: %s", c.Name, why))
		}
		dropping = append(dropping, c)
	}
	for _, c := range dropping {
		c.Compatible, c.Why = true, ""
	}
	f.Compatible = true
	return nil
}

// compatibleDropping says why a conversion going down is not generated
// whole even when the members the earlier version lacks are dropped
// (field_added changes are not held against it), or "" when it is.
// Conversions going up are judged as [Fork.Conversion] judged them.
func (f *Fork) compatibleDropping(c *Conversion) string {
	if c.Up {
		return c.Why
	}
	lo, okOld := f.bundles[c.To]
	lc, okCur := f.bundles[c.From]
	if !okOld || !okCur {
		return c.Why
	}
	changes, err := diff.CompatibleAt(lo.msg.Bundle, lo.ptr, lc.msg.Bundle, lc.ptr, diff.Response)
	if err != nil {
		return err.Error()
	}
	for _, ch := range changes {
		if ch.Breaking && !ch.Dropped {
			return strings.TrimSpace(ch.Path + " " + ch.Message)
		}
	}
	return ""
}
