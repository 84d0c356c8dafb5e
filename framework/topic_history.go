package framework

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of how much deletion history a topic keeps for resuming
// watchers ([WithTombstones]).
const (
	// DefaultTopicTombstones bounds the deleted keys a topic remembers.
	DefaultTopicTombstones = 10000
	// DefaultTopicTombstoneAge bounds how long it remembers each.
	DefaultTopicTombstoneAge = 5 * time.Minute
)

// WithTombstones bounds how many deleted keys the topic remembers, and for
// how long (defaults [DefaultTopicTombstones], [DefaultTopicTombstoneAge]),
// so that a watcher cut off for a while is sent only what changed when it
// comes back: a watcher whose resume point is older than the oldest delete
// remembered is sent a snapshot instead.
func WithTombstones(n int, age time.Duration) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.tombstones, c.tombstoneAge = n, age })
}

// topicHistory is what a topic remembers of its past so that a watcher
// that was cut can resume: the revision of every key's latest change is on
// its entry, and deleted keys are kept as tombstones, bounded by count and
// age. A watcher resumes from revision R when every delete after R is
// still a tombstone; otherwise it is sent a snapshot. The history lives in
// memory and is named by an id new in every process, so a resume point
// never matches a restarted server that reuses its instance name.
//
// Its fields are guarded by the topic's mutex.
type topicHistory struct {
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
	change *topicChange
	at     int64
	sel    selValues
	move   bool
}

func newTopicHistory(maxCount int, maxAge time.Duration) topicHistory {
	if maxCount <= 0 {
		maxCount = DefaultTopicTombstones
	}
	if maxAge <= 0 {
		maxAge = DefaultTopicTombstoneAge
	}
	return topicHistory{id: randomID(8), maxCount: maxCount, maxAge: maxAge, latest: map[string]uint64{}}
}

// bury remembers a delete frame (its gen is its revision) of a key whose
// selector values were sel, made at now.
func (h *topicHistory) bury(ch *topicChange, sel selValues, now int64) {
	h.tombs = append(h.tombs, tombstone{change: ch, at: now, sel: sel})
	h.latest[ch.key] = ch.gen
	h.trim(now)
}

// buryMove remembers the delete frame of a set that moved its key away
// from the selector values sel, made at now.
func (h *topicHistory) buryMove(leave *topicChange, sel selValues, now int64) {
	h.tombs = append(h.tombs, tombstone{change: leave, at: now, sel: sel, move: true})
	h.trim(now)
}

// trim forgets the tombstones beyond the count bound and those older than
// the age bound.
func (h *topicHistory) trim(now int64) {
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
func (h *topicHistory) covers(since, rev uint64, now int64) bool {
	h.trim(now)
	return since >= h.horizon && since <= rev
}

// deletesAfter appends the newest tombstone of each deleted key whose
// revision is after since and which live does not hold again.
func (h *topicHistory) deletesAfter(since uint64, live func(key string) bool, out []*topicChange) []*topicChange {
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
func (h *topicHistory) after(since uint64) []tombstone {
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
func (h *topicHistory) leftAfter(since uint64, sel selection, in func(key string) bool, out []*topicChange) []*topicChange {
	var left map[string]*topicChange
	for _, tb := range h.after(since) {
		if sel.matches(tb.sel) {
			if left == nil {
				left = map[string]*topicChange{}
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
func (t *topicStore) resumeLocked(p resumePoint, sel selection) (changes []*topicChange, ok bool) {
	if p.history != t.history.id || !t.history.covers(p.rev, t.gen, t.s.now()) {
		return nil, false
	}
	if len(sel) > 0 {
		return t.resumeSelectionLocked(p, sel)
	}
	for _, e := range t.entries {
		if e.change.gen > p.rev {
			changes = append(changes, e.change)
		}
	}
	changes = t.history.deletesAfter(p.rev, func(key string) bool { return t.entries[key] != nil }, changes)
	return t.resumeBoundLocked(changes, len(t.entries))
}

// resumeSelectionLocked is [topicStore.resumeLocked] of a selection: it
// reads the keys the index files under the selection and the tombstones
// after p, never every key.
func (t *topicStore) resumeSelectionLocked(p resumePoint, sel selection) ([]*topicChange, bool) {
	var changes []*topicChange
	held := 0
	for key := range t.index.selectedKeys(sel) {
		if e := t.entries[key]; e != nil && sel.matches(e.change.sel) {
			held++
			if e.change.gen > p.rev {
				changes = append(changes, e.change)
			}
		}
	}
	changes = t.history.leftAfter(p.rev, sel, func(key string) bool {
		e := t.entries[key]
		return e != nil && sel.matches(e.change.sel)
	}, changes)
	return t.resumeBoundLocked(changes, held)
}

// resumeBoundLocked sends a snapshot instead of changes that outnumber the
// keys held, and puts the changes in revision order.
func (t *topicStore) resumeBoundLocked(changes []*topicChange, held int) ([]*topicChange, bool) {
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
func sortByRevision(changes []*topicChange) {
	slices.SortFunc(changes, func(a, b *topicChange) int {
		switch {
		case a.gen < b.gen:
			return -1
		case a.gen > b.gen:
			return 1
		}
		return 0
	})
}

// resumePoint is where a watcher asks its stream to start: after revision
// rev of the topic history named history. Its text form, the watch
// request's since parameter, is "<history>.<rev>".
type resumePoint struct {
	history string
	rev     uint64
}

func (p resumePoint) String() string {
	if p.history == "" {
		return ""
	}
	return p.history + "." + strconv.FormatUint(p.rev, 10)
}

// parseResumePoint reads a since parameter; ok is false for anything that
// is not one, which a server answers with a snapshot, never an error.
func parseResumePoint(s string) (resumePoint, bool) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return resumePoint{}, false
	}
	rev, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return resumePoint{}, false
	}
	return resumePoint{history: s[:i], rev: rev}, true
}
