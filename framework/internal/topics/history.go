package topics

import (
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
)

// changeHistory is what a topic remembers of its past so that a watcher
// that was cut can resume: the revision of every key's latest change is on
// its entry, and deleted keys are kept as tombstones, bounded by count and
// age. A watcher resumes from revision R when every delete after R is
// still a tombstone; otherwise it is sent a snapshot. The history lives in
// memory and is named by an id new in every process, so a resume point
// never matches a restarted server that reuses its instance name.
//
// Its fields are guarded by the topic's mutex.
type changeHistory struct {
	id       string
	maxCount int
	maxAge   time.Duration
	// tombs holds the delete frames in revision order, with when each was
	// made (the server's monotonic clock); latest maps a deleted key to the
	// revision of its newest tombstone, so a key deleted twice is sent once.
	tombs  []tombstone
	latest map[string]uint64
	// horizon is the newest revision whose tombstone was forgotten: a
	// resume point before it may have missed a delete.
	horizon uint64
}

// tombstone is a delete frame kept for resuming watchers: of a deleted
// key, or, for a topic with selectors, of a key that moved from the
// selector values sel to others (move), which is a delete for a watcher of
// sel.
type tombstone struct {
	change *change
	at     int64
	sel    selValues
	move   bool
}

func newChangeHistory(maxCount int, maxAge time.Duration) changeHistory {
	if maxCount <= 0 {
		maxCount = DefaultTombstones
	}
	if maxAge <= 0 {
		maxAge = DefaultTombstoneAge
	}
	return changeHistory{id: randomID(8), maxCount: maxCount, maxAge: maxAge, latest: map[string]uint64{}}
}

// bury remembers a delete frame (its gen is its revision) of a key whose
// selector values were sel, made at now.
func (h *changeHistory) bury(ch *change, sel selValues, now int64) {
	h.tombs = append(h.tombs, tombstone{change: ch, at: now, sel: sel})
	h.latest[ch.key] = ch.gen
	h.trim(now)
}

// buryMove remembers the delete frame of a set that moved its key away
// from the selector values sel, made at now.
func (h *changeHistory) buryMove(leave *change, sel selValues, now int64) {
	h.tombs = append(h.tombs, tombstone{change: leave, at: now, sel: sel, move: true})
	h.trim(now)
}

// trim forgets the tombstones beyond the count bound and those older than
// the age bound.
func (h *changeHistory) trim(now int64) {
	drop := 0
	for drop < len(h.tombs) && (len(h.tombs)-drop > h.maxCount || time.Duration(now-h.tombs[drop].at) > h.maxAge) {
		ch := h.tombs[drop].change
		h.horizon = max(h.horizon, ch.gen)
		if !h.tombs[drop].move && h.latest[ch.key] == ch.gen {
			delete(h.latest, ch.key)
		}
		h.tombs[drop] = tombstone{}
		drop++
	}
	if drop > 0 {
		h.tombs = h.tombs[drop:]
		if len(h.tombs) == 0 {
			h.tombs = nil // let the old array go
		}
	}
}

// covers reports whether the history still holds every change after
// revision since of the topic whose latest revision is rev.
func (h *changeHistory) covers(since, rev uint64, now int64) bool {
	h.trim(now)
	return since >= h.horizon && since <= rev
}

// deletesAfter appends the newest tombstone of each deleted key whose
// revision is after since and which live does not hold again.
func (h *changeHistory) deletesAfter(since uint64, live func(key string) bool, out []*change) []*change {
	for _, tb := range h.after(since) {
		ch := tb.change
		if !tb.move && h.latest[ch.key] == ch.gen && !live(ch.key) {
			out = append(out, ch)
		}
	}
	return out
}

// after returns the tombstones after revision since: they are in revision
// order.
func (h *changeHistory) after(since uint64) []tombstone {
	lo, hi := 0, len(h.tombs)
	for lo < hi {
		mid := (lo + hi) / 2
		if h.tombs[mid].change.gen <= since {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return h.tombs[lo:]
}

// leftAfter returns, for each key that left the selection after revision
// since (deleted, or moved to other values) and does not belong to it now
// (in is false), the newest delete frame that took it out.
func (h *changeHistory) leftAfter(since uint64, sel Selection, in func(key string) bool, out []*change) []*change {
	var left map[string]*change
	for _, tb := range h.after(since) {
		if sel.matches(tb.sel) {
			if left == nil {
				left = map[string]*change{}
			}
			left[tb.change.key] = tb.change
		}
	}
	for key, ch := range left {
		if !in(key) {
			out = append(out, ch)
		}
	}
	return out
}

// resumeLocked returns what a watcher of the selection sel (nil: every
// key) resuming from p is sent instead of a snapshot: the latest change of
// every key changed after p that the selection matches, and a delete for
// every key deleted after p or, for a selection, moved out of it, in
// revision order. ok is false when the topic cannot tell (another history,
// a point from its future, a delete or move forgotten) or when the changes
// outnumber the keys: the watcher is then sent a snapshot.
func (t *Store) resumeLocked(p frames.ResumePoint, sel Selection) (changes []*change, ok bool) {
	if p.History != t.history.id || !t.history.covers(p.Rev, t.gen, t.host.Now()) {
		return nil, false
	}
	if len(sel) > 0 {
		return t.resumeSelectionLocked(p, sel)
	}
	for _, e := range t.entries {
		if e.change.gen > p.Rev {
			changes = append(changes, e.change)
		}
	}
	changes = t.history.deletesAfter(p.Rev, func(key string) bool { return t.entries[key] != nil }, changes)
	return t.resumeBoundLocked(changes, len(t.entries))
}

// resumeSelectionLocked is [Store.resumeLocked] of a selection: it
// reads the keys the index files under the selection and the tombstones
// after p, never every key.
func (t *Store) resumeSelectionLocked(p frames.ResumePoint, sel Selection) ([]*change, bool) {
	var changes []*change
	held := 0
	for key := range t.index.selectedKeys(sel) {
		if e := t.entries[key]; e != nil && sel.matches(e.change.sel) {
			held++
			if e.change.gen > p.Rev {
				changes = append(changes, e.change)
			}
		}
	}
	changes = t.history.leftAfter(p.Rev, sel, func(key string) bool {
		e := t.entries[key]
		return e != nil && sel.matches(e.change.sel)
	}, changes)
	return t.resumeBoundLocked(changes, held)
}

// resumeBoundLocked sends a snapshot instead of changes that outnumber the
// keys held, and puts the changes in revision order.
func (t *Store) resumeBoundLocked(changes []*change, held int) ([]*change, bool) {
	if len(changes) > held {
		// More changes than keys (a writer churned through keys): a
		// snapshot is smaller, and a stream never starts with more
		// pending than the topic holds.
		return nil, false
	}
	sortByRevision(changes)
	return changes, true
}

// sortByRevision puts changes (one per key) in the order they were made.
func sortByRevision(changes []*change) {
	slices.SortFunc(changes, func(a, b *change) int {
		switch {
		case a.gen < b.gen:
			return -1
		case a.gen > b.gen:
			return 1
		}
		return 0
	})
}
