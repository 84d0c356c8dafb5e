package topics

// Counters of topics and watch streams, for status pages, metrics and
// tests.

import (
	"slices"
	"sort"

	"github.com/lockstep-dev/lockstep/handshake"
)

// Stats describes one topic a server holds, for status pages,
// metrics and tests.
type Stats struct {
	Contract string `json:"contract"`
	Version  string `json:"version"`
	Topic    string `json:"topic"`
	// Keys is how many objects the topic holds, Writers how many writers
	// own at least one of them or were seen in this process.
	Keys    int `json:"keys"`
	Writers int `json:"writers"`
	// Sets and Deletes count the changes applied since the server started.
	Sets    uint64 `json:"sets"`
	Deletes uint64 `json:"deletes"`
	// Writer says whether the topic has a live writer: server-written,
	// its writer is attached; client-written, some client writes it.
	Writer bool `json:"writer"`
	// Selectors are the fields its watchers may select on.
	Selectors []string `json:"selectors,omitempty"`
	// Revision is the topic's latest revision; Tombstones how many deleted
	// keys (and, for a topic with selectors, moves of a key out of a
	// selection) it remembers for watchers that resume.
	Revision   uint64 `json:"revision"`
	Tombstones int    `json:"tombstones"`
	// Coalesced counts changes that were replaced, in some watcher's queue,
	// by a later change of the same key before being sent, since the server
	// started: how much slow watchers were spared.
	Coalesced uint64 `json:"coalesced"`
	// WatcherCount is how many watch streams are live; Watchers describes
	// each of them, or in the status a server serves at most
	// StatusMaxWatchers of them (ServerStatus.Truncated says so).
	WatcherCount int            `json:"watcherCount"`
	Watchers     []WatcherStats `json:"watchers"`
}

// WatcherStats describes one watch stream. Queued is bounded by the number
// of keys: a key changed again before it was sent replaces its queued
// change (counted in Coalesced) instead of adding one.
type WatcherStats struct {
	Peer handshake.Peer `json:"peer"`
	// Selection is what the watcher selects, as its request's query
	// (node=node-042); empty for every object. Over 256 bytes it is
	// clipped, its length said: a status read is bounded by what the
	// server decides, not by what watchers named.
	Selection string `json:"selection,omitempty"`
	// Queued is how many keys wait to be sent now; MaxQueued the most that
	// ever waited at once.
	Queued    int `json:"queued"`
	MaxQueued int `json:"maxQueued"`
	// Frames is how many frames were sent, Writes in how many writes to the
	// connection, Coalesced how many changes were replaced by a later change
	// of the same key before being sent.
	Frames    uint64 `json:"frames"`
	Writes    uint64 `json:"writes"`
	Coalesced uint64 `json:"coalesced"`
}

func (ws *Stream) stats() WatcherStats {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return WatcherStats{
		Peer: ws.info, Selection: statusSelection(ws.sel.Key(ws.topic.decl.Selectors)), Queued: len(ws.pend), MaxQueued: ws.maxQueued,
		Frames: ws.frames, Writes: ws.writes, Coalesced: ws.coalesced,
	}
}

// Stats returns the topic's counters and those of its watch streams,
// sorted by peer instance.
func (t *Store) Stats() Stats {
	t.mu.Lock()
	st := Stats{
		Contract: t.contract, Version: t.version, Topic: t.name,
		Keys: len(t.entries), Writers: len(t.writers), Sets: t.sets.Load(), Deletes: t.deletes.Load(),
		Writer: t.writerLiveLocked(), Coalesced: t.coalesced.Load(), Revision: t.gen, Tombstones: len(t.history.tombs),
		Watchers: make([]WatcherStats, 0, len(t.watchers)), Selectors: slices.Clone(t.decl.Selectors),
	}
	watchers := make([]*Stream, 0, len(t.watchers))
	for ws := range t.watchers {
		watchers = append(watchers, ws)
	}
	t.mu.Unlock()
	for _, ws := range watchers {
		st.Watchers = append(st.Watchers, ws.stats())
	}
	sort.Slice(st.Watchers, func(i, j int) bool { return st.Watchers[i].Peer.Instance < st.Watchers[j].Peer.Instance })
	st.WatcherCount = len(st.Watchers)
	return st
}
