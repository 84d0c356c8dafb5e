package framework

// The topic store: a topic's objects, its watcher set and the fan-out of
// changes to them.

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// topicChange is one change of a key, encoded once as a complete watch
// frame (one NDJSON line) whose bytes every watcher shares.
type topicChange struct {
	key     string
	frame   []byte
	gen     uint64 // the topic's count of changes when this one was made
	version ObjectVersion
	// sel is, for a set of a topic with selectors, the object's selector
	// values (nil for a delete). leave is the set's delete frame, made
	// once, for the watchers whose selection the key leaves by it.
	sel   selValues
	leave *topicChange
	// header is the write's header its frames carry (nil for none).
	header []byte
}

// encodeSetFrame builds a set frame once (frames.EncodeSet), as the change
// of revision rev. It returns the change and the object's bytes inside
// its frame.
func encodeSetFrame(key string, ver ObjectVersion, rev uint64, raw, header []byte) (*topicChange, []byte) {
	frame, object := frames.EncodeSet(frames.Change{Key: key, Epoch: ver.Epoch, Seq: ver.Seq, Rev: rev, Header: header}, raw)
	return &topicChange{key: key, frame: frame, gen: rev, version: ver, header: header}, object
}

// encodeDeleteFrame builds a delete frame once (frames.EncodeDelete), as
// the change of revision rev.
func encodeDeleteFrame(key string, ver ObjectVersion, rev uint64, writerLost bool, header []byte) *topicChange {
	frame := frames.EncodeDelete(frames.Change{Key: key, Epoch: ver.Epoch, Seq: ver.Seq, Rev: rev, WriterLost: writerLost, Header: header})
	return &topicChange{key: key, frame: frame, gen: rev, version: ver, header: header}
}

// syncedMark is what a synced marker says of a stream: it has brought its
// watcher to revision rev, by resuming or not, and whether the topic had a
// live writer at that revision.
type syncedMark struct {
	rev     uint64
	resumed bool
	writer  bool
}

// appendSynced appends the synced marker m, which names the server
// instance that holds the topic and the topic's history (frames.Synced).
func (t *topicStore) appendSynced(b []byte, m syncedMark) []byte {
	return frames.AppendSynced(b, frames.Synced{Instance: t.s.cfg.Instance, History: t.history.id, Rev: m.rev, Resumed: m.resumed, Writer: m.writer})
}

// topicEntry is a key's current object. Its bytes live inside the frame
// of the change that set it.
type topicEntry struct {
	writer  writerKey // zero when its writer was lost under the keep policy
	version ObjectVersion
	change  *topicChange
	object  []byte // a sub-slice of change.frame
	// share is the writer identity whose write holds the key, in a
	// client-written topic (nil in the server's own): it keeps counting
	// there under the keep policy once its writer is lost, until another
	// writer takes the key over or it is deleted.
	share *writerShare
}

// writerShare is what one writer identity (its limitsKey) holds of a
// client-written topic, over all its instances: keys and bytes of
// objects, bounded by WithMaxKeysPerWriter and WithMaxBytesPerWriter
// (share.go).
type writerShare struct {
	id    string
	keys  int
	bytes int
}

// topicStore holds one topic of one served contract version: its objects,
// their writers, and its watch streams. Objects live in memory only.
type topicStore struct {
	s        *Server
	contract *Contract
	name     string
	decl     handshake.Topic
	cfg      topicConfig
	// validate checks a client's object; set for client-written topics.
	validate func(raw []byte) error
	// writer is a server-written topic's *TopicWriter[T], for the forks
	// that wait for it ([ForkServedTopic]); guarded by Server.mu.
	writer any

	// mu guards the fields below it. Lock order, outermost first:
	// TopicWriter.mirrorMu, then topicStore.mu, then watchStream.mu; a
	// client's write reads the session table under mu (sessionLostLocked).
	// Server.mu is never held with mu: a request finds its topic under
	// Server.mu and releases it before taking mu. Watchers are marked and
	// closed gracefully under mu; a stream drops its own lock before it
	// takes mu to leave the watcher set.
	mu      sync.Mutex
	entries map[string]*topicEntry
	bytes   int // of the entries' objects, bounded by cfg.maxBytes
	// shares are what each writer identity holds of a client-written
	// topic, by its limitsKey; dropped when it holds nothing.
	shares   map[string]*writerShare
	writers  map[writerKey]*writerState
	watchers map[*watchStream]struct{}
	// peerWatchers counts each peer's watchers (by its limits key), for
	// its share of the topic's watchers.
	peerWatchers map[string]int
	closed       bool // the server is draining or stopped: no new watchers
	// index files keys and watchers by selector value; nil for a topic
	// without selectors.
	index *topicIndex

	// detached says the server's writer is detached: the topic has no
	// live writer (see [TopicWriter.Detach]).
	detached bool
	// history remembers deleted keys, so that a watcher can resume.
	history topicHistory

	// gen counts the changes applied: it is the topic's revision, and a
	// change's gen is its revision. fan holds the latest change of each
	// key not yet handed to the watchers (fanIndex: its place); fanning
	// says whether the fan-out goroutine runs.
	gen      uint64
	fan      []*topicChange
	fanIndex map[string]int
	fanning  bool

	sets, deletes atomic.Uint64

	// coalesced counts changes replaced in a watcher's queue by a later

	// change of the same key, over every watcher this topic ever had.

	coalesced atomic.Uint64
}

// registerTopic adds a topic of a contract version to the server; it
// panics on setup mistakes, which are programming errors.
func (s *Server) registerTopic(c *Contract, name string, side handshake.Role, opts []TopicOption) *topicStore {
	decl, ok := c.Topic(name)
	if !ok {
		panic(fmt.Sprintf("lockstep: contract %s %s declares no topic %s", c.Name(), c.Version(), name))
	}
	if decl.Writer != side {
		if side == handshake.RoleServer {
			panic(fmt.Sprintf("lockstep: topic %s is written by the client; use ServeClientTopic", name))
		}
		panic(fmt.Sprintf("lockstep: topic %s is written by the server; use ServeTopic", name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.servedVersionLocked(c, "topics")
	if sv.topics == nil {
		sv.topics = map[string]*topicStore{}
	}
	if _, dup := sv.topics[name]; dup {
		panic(fmt.Sprintf("lockstep: %s %s topic %s registered twice", c.Name(), c.Version(), name))
	}
	t := &topicStore{
		s: s, contract: c, name: name, decl: decl, cfg: newTopicConfig(opts),
		entries:  map[string]*topicEntry{},
		shares:   map[string]*writerShare{},
		writers:  map[writerKey]*writerState{},
		watchers: map[*watchStream]struct{}{}, peerWatchers: map[string]int{},
	}
	t.index = newTopicIndex(decl.Selectors)
	t.detached = t.cfg.detached
	t.history = newTopicHistory(t.cfg.tombstones, t.cfg.tombstoneAge)
	sv.topics[name] = t
	return t
}

// allTopics returns every topic the server holds.
func (s *Server) allTopics() []*topicStore {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*topicStore
	for _, sc := range s.contracts {
		for _, sv := range sc.versions {
			for _, t := range sv.topics {
				out = append(out, t)
			}
		}
	}
	return out
}

// topicWrite is one write of a key's object to a topic store.
type topicWrite struct {
	writer writerKey
	// holder is the writer identity the write counts against ("" for the
	// server's own writer).
	holder string
	// epoch and seq are the writer's version of the write; seq 0 takes the
	// writer's next sequence.
	epoch string
	seq   uint64
	key   string
	// raw is a JSON object with no insignificant whitespace.
	raw []byte
	// header is the write's header its frames carry, a JSON object, or
	// nil ([changeHeader]).
	header []byte
}

// set stores wr.raw under wr.key for writer wr.writer. A write older than
// the key's current one from the same writer epoch (a resend) changes
// nothing and reports applied false.
func (t *topicStore) set(wr topicWrite) (ObjectVersion, bool, error) {
	w, holder, epoch, seq, key, raw := wr.writer, wr.holder, wr.epoch, wr.seq, wr.key, wr.raw
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessionLostLocked(w) {
		return ObjectVersion{}, false, errWriterSessionLost
	}
	e := t.entries[key]
	if err := t.ownerConflict(e, w, key); err != nil {
		return ObjectVersion{}, false, err
	}
	if ws := t.writers[w]; ws != nil && epoch != "" && epoch != ws.epoch {
		// A writer seen in a new epoch has restarted: the keys of its
		// earlier epoch follow the lost-writer policy before this write
		// is weighed against the bounds, so that keys deleted for it do
		// not count against its share.
		t.writerFor(w, epoch, key)
	}
	var share *writerShare
	if holder != "" {
		if share = t.shares[holder]; share == nil {
			share = &writerShare{id: holder}
		}
	}
	if err := t.admitLocked(e, share, len(raw)); err != nil {
		return ObjectVersion{}, false, err
	}
	ws := t.writerFor(w, epoch, key)
	if seq == 0 {
		seq = ws.seq + 1
	}
	if e != nil && e.writer == w && e.version.Epoch == ws.epoch && seq <= e.version.Seq {
		return e.version, false, nil
	}
	ws.seq = max(ws.seq, seq)
	ver := ObjectVersion{Epoch: ws.epoch, Seq: seq}
	ch, object := encodeSetFrame(key, ver, t.gen+1, raw, wr.header)
	var old selValues
	if t.index != nil {
		ch.sel = objectSelValues(t.index.selectors, raw)
		if e != nil {
			old = e.change.sel
			t.index.unfileKey(key, old)
			if !old.equal(ch.sel) {
				// A move: a delete for the watchers of the old values,
				// now and when they resume.
				ch.leave = encodeDeleteFrame(key, ver, ch.gen, false, wr.header)
				t.history.buryMove(ch.leave, old, t.s.now())
			}
		}
		t.index.fileKey(key, ch.sel)
	}
	held := 0
	if e != nil {
		held = len(e.object)
		t.releaseLocked(e)
	}
	t.entries[key] = &topicEntry{writer: w, version: ver, change: ch, object: object, share: share}
	t.bytes += len(object) - held
	if share != nil {
		share.keys++
		share.bytes += len(object)
		t.shares[share.id] = share
	}
	ws.keys[key] = struct{}{}
	t.sets.Add(1)
	t.publishLocked(ch, old)
	return ver, true, nil
}

// admitLocked checks a write of an object of n bytes at a key whose entry
// is e (nil for a new key), by the writer identity share (nil for the
// server's own writer), against the topic's bounds: its keys and bytes,
// and for a client's write the writer's shares of them and the reserve
// (share.go). An object written no larger is never refused for bytes.
func (t *topicStore) admitLocked(e *topicEntry, share *writerShare, n int) error {
	keys := sharedBound{max: int64(t.cfg.maxKeys), perPeer: int64(t.cfg.maxKeys)}
	bytes := sharedBound{max: int64(t.cfg.maxBytes), perPeer: int64(t.cfg.maxBytes), floor: bytesFloor}
	var heldKeys, heldBytes, addKeys, addBytes int64
	growKeys, growBytes := int64(1), int64(n)
	if e != nil {
		growKeys, growBytes = 0, int64(n-len(e.object))
	}
	addKeys, addBytes = growKeys, growBytes
	if share != nil {
		keys.perPeer, bytes.perPeer = int64(t.cfg.writerKeys), int64(t.cfg.writerBytes)
		heldKeys, heldBytes = int64(share.keys), int64(share.bytes)
		if e == nil || e.share != share {
			// A new key, or one this identity takes over (kept after its
			// writer was lost): all of it is new to this writer's share.
			addKeys, addBytes = 1, int64(n)
		}
	}
	switch keys.admit(int64(len(t.entries)), heldKeys, addKeys, growKeys) {
	case shareOverPeer:
		return overLimit(t.s.cfg.Metrics, limitTopicKeysPerWriter, CodeResourceExhausted,
			"%s holds its share of %d keys of topic %s (%s)", share.id, keys.perPeer, t.name, limitTopicKeysPerWriter)
	case shareOverBound:
		return overLimit(t.s.cfg.Metrics, limitTopicKeys, CodeResourceExhausted, "topic %s holds its limit of %d keys (%s)", t.name, t.cfg.maxKeys, limitTopicKeys)
	case shareReserved:
		return overLimit(t.s.cfg.Metrics, limitTopicKeys, CodeResourceExhausted,
			"topic %s holds %d of its %d keys; the rest are kept for writers holding at most %d (%s)", t.name, len(t.entries), t.cfg.maxKeys, keys.little(), limitTopicKeys)
	}
	switch bytes.admit(int64(t.bytes), heldBytes, addBytes, growBytes) {
	case shareOverPeer:
		return overLimit(t.s.cfg.Metrics, limitTopicBytesPerWriter, CodeResourceExhausted,
			"%s would hold %d bytes of objects of topic %s, over its share of %d (%s)", share.id, heldBytes+addBytes, t.name, bytes.perPeer, limitTopicBytesPerWriter)
	case shareOverBound:
		return overLimit(t.s.cfg.Metrics, limitTopicBytes, CodeResourceExhausted,
			"topic %s would hold %d bytes of objects, over its limit of %d (%s)", t.name, int64(t.bytes)+growBytes, t.cfg.maxBytes, limitTopicBytes)
	case shareReserved:
		return overLimit(t.s.cfg.Metrics, limitTopicBytes, CodeResourceExhausted,
			"topic %s would hold %d of its %d bytes of objects; the rest are kept for writers holding at most %d (%s)",
			t.name, int64(t.bytes)+growBytes, t.cfg.maxBytes, bytes.little(), limitTopicBytes)
	}
	return nil
}

// releaseLocked takes an entry that is replaced or removed out of the
// share that held it.
func (t *topicStore) releaseLocked(e *topicEntry) {
	sh := e.share
	if sh == nil {
		return
	}
	sh.keys--
	sh.bytes -= len(e.object)
	if sh.keys == 0 {
		delete(t.shares, sh.id)
	}
}

// del removes key for writer w; see [topicStore.set] for seq.
func (t *topicStore) del(w writerKey, epoch string, seq uint64, key string, header []byte) (ObjectVersion, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessionLostLocked(w) {
		return ObjectVersion{}, false, errWriterSessionLost
	}
	e := t.entries[key]
	if err := t.ownerConflict(e, w, key); err != nil {
		return ObjectVersion{}, false, err
	}
	ws := t.writerFor(w, epoch, key)
	if seq == 0 {
		seq = ws.seq + 1
	}
	if e == nil {
		return ObjectVersion{Epoch: ws.epoch, Seq: seq}, false, nil
	}
	if e.writer == w && e.version.Epoch == ws.epoch && seq <= e.version.Seq {
		return e.version, false, nil
	}
	ws.seq = max(ws.seq, seq)
	ver := ObjectVersion{Epoch: ws.epoch, Seq: seq}
	delete(ws.keys, key)
	t.removeEntryLocked(key, e, encodeDeleteFrame(key, ver, t.gen+1, false, header))
	return ver, true, nil
}

// removeEntryLocked deletes key, whose entry is e, publishing ch, its
// delete frame, and keeping it as a tombstone.
func (t *topicStore) removeEntryLocked(key string, e *topicEntry, ch *topicChange) {
	delete(t.entries, key)
	t.bytes -= len(e.object)
	t.releaseLocked(e)
	old := e.change.sel
	if t.index != nil {
		t.index.unfileKey(key, old)
	}
	t.deletes.Add(1)
	t.publishLocked(ch, old)
	t.history.bury(ch, old, t.s.now())
}

// publishLocked hands a change to the topic's fan-out: the writer only
// records it as the latest change of its key, so a write costs the same
// however many watchers there are. The fan-out goroutine, running while
// there is something to hand out, passes the latest changes to every
// watcher in batches.
//
// For a topic with selectors, old is the key's selector values before the
// change (nil for a new key), so that the fan-out can tell the watchers of
// every value the key left.
func (t *topicStore) publishLocked(ch *topicChange, old selValues) {
	t.gen = ch.gen
	if len(t.watchers) == 0 || t.closed {
		return // snapshots read the entries; nobody waits for changes
	}
	if t.index != nil {
		t.index.publish(ch, old)
	}
	if i, ok := t.fanIndex[ch.key]; ok {
		t.fan[i] = ch
	} else {
		if t.fanIndex == nil {
			t.fanIndex = map[string]int{}
		}
		t.fanIndex[ch.key] = len(t.fan)
		t.fan = append(t.fan, ch)
	}
	if !t.fanning {
		t.fanning = true
		t.s.watchWG.Add(1)
		go t.fanOut()
	}
}

// fanOut hands the pending changes to every watcher, round after round,
// until none are pending.
func (t *topicStore) fanOut() {
	defer t.s.watchWG.Done()
	var batch []*topicChange
	var watchers []*watchStream
	var deliveries []delivery
	for {
		t.mu.Lock()
		if len(t.fan) == 0 || t.closed {
			t.fanning = false
			t.fan, t.fanIndex = nil, nil
			t.mu.Unlock()
			return
		}
		batch, t.fan = t.fan, batch[:0]
		clear(t.fanIndex)
		watchers = watchers[:0]
		everyone := t.watchers
		if t.index != nil {
			// Selecting watchers get what their selection concerns;
			// the others, every change. A selecting watcher is handed
			// its changes one at a time, and its flush may send some
			// before the rest arrive, so they are handed on in the order
			// they were made (the batch holds each key at the place it
			// first changed): otherwise a stream could carry a revision
			// before an earlier one, and a watcher resuming from the
			// later would never get the earlier change.
			everyone = t.index.everyone
			sortByRevision(batch)
			deliveries = t.index.route(batch, deliveries[:0])
		}
		for ws := range everyone {
			watchers = append(watchers, ws)
		}
		t.mu.Unlock()
		for _, ws := range watchers {
			ws.markAll(batch)
		}
		for _, d := range deliveries {
			d.ws.markOne(d.ch)
		}
		clear(batch)
		clear(watchers)
		clear(deliveries)
	}
}

// addWatcher registers a watch stream whose first frames are the current
// object of every key its selection (nil: every key) matches, or, when the
// topic can resume the watcher from since (a resume point, "" for none),
// only the changes after it; then a synced marker.
func (t *topicStore) addWatcher(sess *session, since string, sel selection) (*watchStream, error) {
	ttl := t.s.cfg.SessionTTL
	ws := &watchStream{
		topic: t, sess: sess, sel: sel, peer: clientKey{sess.contract, sess.peer.Instance}, info: sess.peer,
		pingEvery: ttl / 2, writeTimeout: t.s.cfg.watchWriteTimeout,
		needSynced: true, finished: make(chan struct{}),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, Errorf(CodeUnavailable, "%s is draining: watch another endpoint", t.s.cfg.Component)
	}
	peer := sess.usage.Key
	bound := sharedBound{max: int64(t.cfg.maxWatchers), perPeer: int64(t.cfg.peerWatchers)}
	switch bound.admit(int64(len(t.watchers)), int64(t.peerWatchers[peer]), 1, 1) {
	case shareOverPeer:
		return nil, overLimit(t.s.cfg.Metrics, limitWatchersPerTopicPerPeer, CodeResourceExhausted,
			"this peer holds its share of %d watchers of topic %s", bound.perPeer, t.name)
	case shareOverBound:
		return nil, overLimit(t.s.cfg.Metrics, limitWatchersPerTopic, CodeResourceExhausted, "topic %s has its limit of %d watchers", t.name, t.cfg.maxWatchers)
	case shareReserved:
		return nil, overLimit(t.s.cfg.Metrics, limitWatchersPerTopic, CodeResourceExhausted,
			"topic %s has %d of its %d watchers; the rest are kept for peers holding at most %d", t.name, len(t.watchers), t.cfg.maxWatchers, bound.little())
	}
	// The session's and its peer's watchers (Limits), released in
	// removeWatcher.
	if err := t.s.limits.AddWatcher(sess.usage, &sess.watchers); err != nil {
		return nil, err
	}
	if p, ok := parseResumePoint(since); ok {
		ws.pend, ws.resumed = t.resumeLocked(p, sel)
	}
	if !ws.resumed {
		ws.pend = t.snapshotLocked(sel)
	}
	ws.index = make(map[string]int, len(ws.pend))
	for i, ch := range ws.pend {
		ws.index[ch.key] = i
	}
	ws.maxQueued = len(ws.pend)
	ws.since, ws.writerAtSince = t.gen, t.writerLiveLocked()
	t.watchers[ws] = struct{}{}
	t.peerWatchers[peer]++
	if t.index != nil {
		t.index.addWatcher(ws)
	}
	return ws, nil
}

// snapshotLocked returns the latest change of every key the selection
// matches: through the index for a selection, so a watcher's snapshot
// costs its share of the keys, not all of them.
func (t *topicStore) snapshotLocked(sel selection) []*topicChange {
	if len(sel) == 0 {
		out := make([]*topicChange, 0, len(t.entries))
		for _, e := range t.entries {
			out = append(out, e.change)
		}
		return out
	}
	keys := t.index.selectedKeys(sel)
	out := make([]*topicChange, 0, len(keys))
	for key := range keys {
		if e := t.entries[key]; e != nil && sel.matches(e.change.sel) {
			out = append(out, e.change)
		}
	}
	return out
}

func (t *topicStore) removeWatcher(ws *watchStream) {
	t.mu.Lock()
	if _, ok := t.watchers[ws]; ok {
		delete(t.watchers, ws)
		if peer := ws.sess.usage.Key; t.peerWatchers[peer] <= 1 {
			delete(t.peerWatchers, peer)
		} else {
			t.peerWatchers[peer]--
		}
		if t.index != nil {
			t.index.removeWatcher(ws)
		}
		t.s.limits.RemoveWatcher(ws.sess.usage, &ws.sess.watchers)
	}
	t.mu.Unlock()
}

// closeWatchers ends the streams that match with a closing frame giving
// reason, after what they still have to send.
func (t *topicStore) closeWatchers(match func(*watchStream) bool, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ws := range t.watchers {
		if match(ws) {
			ws.closeGracefully(reason)
		}
	}
}

// topicsDrain ends every watch stream with a closing frame and refuses new
// ones: the server is draining.
func (s *Server) topicsDrain() {
	for _, t := range s.allTopics() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		t.closeWatchers(func(*watchStream) bool { return true }, protocol.CloseDraining)
	}
}

// topicsStop closes every watch stream's connection and waits for their
// goroutines: the server stopped.
func (s *Server) topicsStop() {
	for _, t := range s.allTopics() {
		t.mu.Lock()
		t.closed = true
		watchers := make([]*watchStream, 0, len(t.watchers))
		for ws := range t.watchers {
			watchers = append(watchers, ws)
		}
		t.mu.Unlock()
		for _, ws := range watchers {
			ws.closeNow()
		}
	}
	s.watchWG.Wait()
}
