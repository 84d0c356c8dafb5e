// Package share is the one rule by which a server divides a bound that
// every peer shares (its sessions, its connections, the keys, bytes and
// watchers of a topic): the sessions' limits and the topic store both
// admit by it, so it lives apart from either.
//
// Some of a server's bounds are shared by every peer: its
// sessions, its connections, and the keys and bytes of a client-written
// topic, shared by its writers. A share per peer alone does not keep one
// peer, or a few, from locking the others out: at a quarter each, four
// peers hold everything, and an honest peer that arrives next (a kubelet
// that restarted, a new node) is refused. So every shared bound is divided
// by one rule, here:
//
//   - a peer holds at most its share (Limits.SessionsPerPeer,
//     Limits.ConnsPerSource, Limits.ConnsPerPeer, WithMaxKeysPerWriter,
//     WithMaxBytesPerWriter, and a peer's share of a server-written topic
//     its handlers write for it, TopicWriter.SetFor);
//   - the last quarter of the bound (or what the share leaves, if less) is
//     its reserve, kept for peers that hold little: at most 1/4096 of the
//     bound, so that filling the reserve takes over a thousand peers; but
//     never less than a real share at small bounds, a quarter of the
//     reserve up to a floor (16 sessions, connections, keys or watchers,
//     64 KiB of objects). Rounded to one, as it was, a descriptor limit of
//     256 left a kubelet one connection of the reserve's 48.
//
// A peer at its share when others hold three quarters is refused; a
// kubelet with its one session, or its one lease, is admitted as long as
// the bound has room at all. What does not grow the total (a
// re-handshake that replaces a session, an object written no larger) is
// never refused for the bound.
package share

// Bound is one bound shared by peers, and one peer's share of it.
type Bound struct {
	Max     int64 // the bound, over every peer
	PerPeer int64 // what one peer may hold of it
	// Floor is the least a peer that holds little may hold of the reserve
	// (if the reserve's quarter is as much); 0 means 16 units.
	Floor int64
}

// BytesFloor is the floor of a bound in bytes: a peer holding little
// holds some objects, not 16 bytes.
const BytesFloor = 64 << 10

// Verdict is what a shared bound says of a peer's request.
type Verdict int

// The verdicts of [Bound.Admit].
const (
	Admitted  Verdict = iota // the peer may take it
	OverPeer                 // the peer would hold more than its share
	OverBound                // the total would pass the bound
	Reserved                 // the total would reach the reserve, which the peer holds too much for
)

// Reserve is how much of the bound is kept for peers that hold little.
func (b Bound) Reserve() int64 { return min(b.Max/4, b.Max-b.PerPeer) }

// Little is the most a peer may hold and still take from the reserve:
// 1/4096 of the bound, or at small bounds a quarter of the reserve up to
// the floor, and at least one unit.
func (b Bound) Little() int64 {
	floor := b.Floor
	if floor == 0 {
		floor = 16
	}
	return max(1, b.Max/4096, min(b.Reserve()/4, floor))
}

// Admit says whether a peer holding held of a bound whose peers hold
// total may take add more, which grows the total by grow (less than add
// when the peer takes over what another held, negative when it gives
// back more than it takes).
func (b Bound) Admit(total, held, add, grow int64) Verdict {
	switch {
	case add > 0 && held+add > b.PerPeer:
		return OverPeer
	case grow > 0 && total+grow > b.Max:
		return OverBound
	case grow > 0 && total+grow > b.Max-b.Reserve() && held+add > b.Little():
		return Reserved
	}
	return Admitted
}
