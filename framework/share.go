package framework

// Shared bounds: the one rule by which a bound every peer shares is
// divided lives in framework/internal/share; the sessions' and the
// connections' limits read it through these names.

import "github.com/lockstep-dev/lockstep/framework/internal/share"

// sharedBound is one bound shared by peers, and one peer's share of it
// (share.Bound).
type sharedBound struct {
	max     int64 // the bound, over every peer
	perPeer int64 // what one peer may hold of it
	// floor is the least a peer that holds little may hold of the reserve;
	// 0 means 16 units.
	floor int64
}

func (b sharedBound) bound() share.Bound {
	return share.Bound{Max: b.max, PerPeer: b.perPeer, Floor: b.floor}
}

// little is share.Bound.Little.
func (b sharedBound) little() int64 { return b.bound().Little() }

// admit is share.Bound.Admit.
func (b sharedBound) admit(total, held, add, grow int64) shareVerdict {
	return b.bound().Admit(total, held, add, grow)
}

type shareVerdict = share.Verdict

const (
	shareAdmitted  = share.Admitted
	shareOverPeer  = share.OverPeer
	shareOverBound = share.OverBound
	shareReserved  = share.Reserved
)

// bytesFloor is share.BytesFloor, the floor of a bound in bytes.
const bytesFloor = share.BytesFloor
