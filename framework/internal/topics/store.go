package topics

// The topic store: a topic's objects, its watcher set and the fan-out of
// changes to them.

import (
	"sync"
	"sync/atomic"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/share"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// change is one change of a key, encoded once as a complete watch
// frame (one NDJSON line) whose bytes every watcher shares.
type change struct {
	key     string
	frame   []byte
	gen     uint64 // the topic's count of changes when this one was made
	version ObjectVersion
	// sel is, for a set of a topic with selectors, the object's selector
	// values (nil for a delete). leave is the set's delete frame, made
	// once, for the watchers whose selection the key leaves by it.
	sel   selValues
	leave *change
	// header is the write's header its frames carry (nil for none).
	header []byte
}

// encodeSetFrame builds a set frame once (frames.EncodeSet), as the change
// of revision rev. It returns the change and the object's bytes inside
// its frame.
func encodeSetFrame(key string, ver ObjectVersion, rev uint64, raw, header []byte) (*change, []byte) {
	frame, object := frames.EncodeSet(frames.Change{Key: key, Epoch: ver.Epoch, Seq: ver.Seq, Rev: rev, Header: header}, raw)
	return &change{key: key, frame: frame, gen: rev, version: ver, header: header}, object
}

// encodeDeleteFrame builds a delete frame once (frames.EncodeDelete), as
// the change of revision rev.
func encodeDeleteFrame(key string, ver ObjectVersion, rev uint64, writerLost bool, header []byte) *change {
	frame := frames.EncodeDelete(frames.Change{Key: key, Epoch: ver.Epoch, Seq: ver.Seq, Rev: rev, WriterLost: writerLost, Header: header})
	return &change{key: key, frame: frame, gen: rev, version: ver, header: header}
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
func (t *Store) appendSynced(b []byte, m syncedMark) []byte {
	return frames.AppendSynced(b, frames.Synced{Instance: t.host.Instance, History: t.history.id, Rev: m.rev, Resumed: m.resumed, Writer: m.writer})
}

// entry is a key's current object. Its bytes live inside the frame
// of the change that set it.
type entry struct {
	writer  WriterID // zero when its writer was lost under the keep policy
	version ObjectVersion
	change  *change
	object  []byte // a sub-slice of change.frame
	// share is the writer identity whose write holds the key, in a
	// client-written topic (nil in the server's own): it keeps counting
	// there under the keep policy once its writer is lost, until another
	// writer takes the key over or it is deleted.
	share *writerShare
}

// writerShare is what one writer identity (its share key) holds of a
// client-written topic, over all its instances: keys and bytes of
// objects, bounded by WithMaxKeysPerWriter and WithMaxBytesPerWriter
// (framework/internal/share).
type writerShare struct {
	id    string
	keys  int
	bytes int
}

// Store holds one topic of one served contract version: its objects,
// their writers, and its watch streams. Objects live in memory only.
type Store struct {
	host     *Host
	contract string // the contract's name
	version  string // the contract's version
	server   string // the contract's server component
	name     string
	decl     handshake.Topic
	cfg      Config
	// validate checks a client's object; set for client-written topics.
	validate func(raw []byte) error
	// Writer is a server-written topic's *TopicWriter[T], for the forks
	// that wait for it (ForkServedTopic); guarded by its [Table]'s lock,
	// which sets it ([Table.Served]).
	Writer any

	// mu guards the fields below it. Lock order, outermost first:
	// Writer.mirrorMu, then Store.mu, then Stream.mu; a
	// client's write asks Host.SessionLive under mu (sessionLostLocked).
	// Server.mu is never held with mu: a request finds its topic under
	// Server.mu and releases it before taking mu. Watchers are marked and
	// closed gracefully under mu; a stream drops its own lock before it
	// takes mu to leave the watcher set.
	mu      sync.Mutex
	entries map[string]*entry
	bytes   int // of the entries' objects, bounded by cfg.maxBytes
	// shares are what each writer identity holds of a client-written
	// topic, by its share key; dropped when it holds nothing.
	shares   map[string]*writerShare
	writers  map[WriterID]*writerState
	watchers map[*Stream]struct{}
	// peerWatchers counts each peer's watchers (by its limits key), for
	// its share of the topic's watchers.
	peerWatchers map[string]int
	closed       bool // the server is draining or stopped: no new watchers
	// index files keys and watchers by selector value; nil for a topic
	// without selectors.
	index *selIndex

	// detached says the server's writer is detached: the topic has no
	// live writer (see TopicWriter.Detach).
	detached bool
	// history remembers deleted keys, so that a watcher can resume.
	history changeHistory

	// gen counts the changes applied: it is the topic's revision, and a
	// change's gen is its revision. fan holds the latest change of each
	// key not yet handed to the watchers (fanIndex: its place); fanning
	// says whether the fan-out goroutine runs.
	gen      uint64
	fan      []*change
	fanIndex map[string]int
	fanning  bool

	sets, deletes atomic.Uint64

	// coalesced counts changes replaced in a watcher's queue by a later
	// change of the same key, over every watcher this topic ever had.
	coalesced atomic.Uint64
}

// StoreConfig is what a topic's store is made of.
type StoreConfig struct {
	Host *Host
	// Contract and Version name the served contract version; Topic is the
	// topic's name and Decl its declaration.
	Contract, Version, Topic string
	Decl                     handshake.Topic
	// Server is the component that serves the contract, named when a
	// client writes a topic the server writes.
	Server string
	// Config is the topic's limits, with its defaults filled in
	// ([Config.WithDefaults]).
	Config Config
	// Validate checks a client's object (decoded as the server's type
	// for it); required for a client-written topic, unused otherwise.
	Validate func(raw []byte) error
}

// NewStore returns the empty store of a topic.
func NewStore(c StoreConfig) *Store {
	t := &Store{
		host: c.Host, contract: c.Contract, version: c.Version, server: c.Server, name: c.Topic, decl: c.Decl, cfg: c.Config,
		validate: c.Validate,
		entries:  map[string]*entry{},
		shares:   map[string]*writerShare{},
		writers:  map[WriterID]*writerState{},
		watchers: map[*Stream]struct{}{}, peerWatchers: map[string]int{},
	}
	t.index = newSelIndex(c.Decl.Selectors)
	t.detached = c.Config.Detached
	t.history = newChangeHistory(c.Config.Tombstones, c.Config.TombstoneAge)
	return t
}

// Name returns the topic's name.
func (t *Store) Name() string { return t.name }

// Contract returns the name of the topic's contract.
func (t *Store) Contract() string { return t.contract }

// Version returns the version of the topic's contract.
func (t *Store) Version() string { return t.version }

// Server returns the component that serves the topic's contract.
func (t *Store) Server() string { return t.server }

// Decl returns the topic's declaration.
func (t *Store) Decl() handshake.Topic { return t.decl }

// Config returns the topic's limits.
func (t *Store) Config() Config { return t.cfg }

// Write is one write of a key's object to a topic store.
type Write struct {
	Writer WriterID
	// holder is the writer identity the write counts against ("" for the
	// server's own writer).
	Holder string
	// epoch and seq are the writer's version of the write; seq 0 takes the
	// writer's next sequence.
	Epoch string
	Seq   uint64
	Key   string
	// raw is a JSON object with no insignificant whitespace.
	Raw []byte
	// header is the write's header its frames carry, a JSON object, or
	// nil ([changeHeader]).
	Header []byte
}

// Set stores wr.Raw under wr.Key for writer wr.Writer. A write older than
// the key's current one from the same writer epoch (a resend) changes
// nothing and reports applied false.
func (t *Store) Set(wr Write) (ObjectVersion, bool, error) {
	w, holder, epoch, seq, key, raw := wr.Writer, wr.Holder, wr.Epoch, wr.Seq, wr.Key, wr.Raw
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessionLostLocked(w) {
		return ObjectVersion{}, false, ErrWriterSessionLost
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
	var sh *writerShare
	if holder != "" {
		if sh = t.shares[holder]; sh == nil {
			sh = &writerShare{id: holder}
		}
	}
	if err := t.admitLocked(e, sh, len(raw)); err != nil {
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
	ch, object := encodeSetFrame(key, ver, t.gen+1, raw, wr.Header)
	var old selValues
	if t.index != nil {
		ch.sel = objectSelValues(t.index.selectors, raw)
		if e != nil {
			old = e.change.sel
			t.index.unfileKey(key, old)
			if !old.equal(ch.sel) {
				// A move: a delete for the watchers of the old values,
				// now and when they resume.
				ch.leave = encodeDeleteFrame(key, ver, ch.gen, false, wr.Header)
				t.history.buryMove(ch.leave, old, t.host.Now())
			}
		}
		t.index.fileKey(key, ch.sel)
	}
	held := 0
	if e != nil {
		held = len(e.object)
		t.releaseLocked(e)
	}
	t.entries[key] = &entry{writer: w, version: ver, change: ch, object: object, share: sh}
	t.bytes += len(object) - held
	if sh != nil {
		sh.keys++
		sh.bytes += len(object)
		t.shares[sh.id] = sh
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
// (framework/internal/share). An object written no larger is never refused for bytes.
func (t *Store) admitLocked(e *entry, sh *writerShare, n int) error {
	keys := share.Bound{Max: int64(t.cfg.MaxKeys), PerPeer: int64(t.cfg.MaxKeys)}
	bytes := share.Bound{Max: int64(t.cfg.MaxBytes), PerPeer: int64(t.cfg.MaxBytes), Floor: share.BytesFloor}
	var heldKeys, heldBytes, addKeys, addBytes int64
	growKeys, growBytes := int64(1), int64(n)
	if e != nil {
		growKeys, growBytes = 0, int64(n-len(e.object))
	}
	addKeys, addBytes = growKeys, growBytes
	if sh != nil {
		keys.PerPeer, bytes.PerPeer = int64(t.cfg.WriterKeys), int64(t.cfg.WriterBytes)
		heldKeys, heldBytes = int64(sh.keys), int64(sh.bytes)
		if e == nil || e.share != sh {
			// A new key, or one this identity takes over (kept after its
			// writer was lost): all of it is new to this writer's share.
			addKeys, addBytes = 1, int64(n)
		}
	}
	switch keys.Admit(int64(len(t.entries)), heldKeys, addKeys, growKeys) {
	case share.OverPeer:
		return t.host.overLimit(limits.TopicKeysPerWriter, apierror.CodeResourceExhausted,
			"%s holds its share of %d keys of topic %s (%s)", sh.id, keys.PerPeer, t.name, limits.TopicKeysPerWriter)
	case share.OverBound:
		return t.host.overLimit(limits.TopicKeys, apierror.CodeResourceExhausted, "topic %s holds its limit of %d keys (%s)", t.name, t.cfg.MaxKeys, limits.TopicKeys)
	case share.Reserved:
		return t.host.overLimit(limits.TopicKeys, apierror.CodeResourceExhausted,
			"topic %s holds %d of its %d keys; the rest are kept for writers holding at most %d (%s)", t.name, len(t.entries), t.cfg.MaxKeys, keys.Little(), limits.TopicKeys)
	}
	switch bytes.Admit(int64(t.bytes), heldBytes, addBytes, growBytes) {
	case share.OverPeer:
		return t.host.overLimit(limits.TopicBytesPerWriter, apierror.CodeResourceExhausted,
			"%s would hold %d bytes of objects of topic %s, over its share of %d (%s)", sh.id, heldBytes+addBytes, t.name, bytes.PerPeer, limits.TopicBytesPerWriter)
	case share.OverBound:
		return t.host.overLimit(limits.TopicBytes, apierror.CodeResourceExhausted,
			"topic %s would hold %d bytes of objects, over its limit of %d (%s)", t.name, int64(t.bytes)+growBytes, t.cfg.MaxBytes, limits.TopicBytes)
	case share.Reserved:
		return t.host.overLimit(limits.TopicBytes, apierror.CodeResourceExhausted,
			"topic %s would hold %d of its %d bytes of objects; the rest are kept for writers holding at most %d (%s)",
			t.name, int64(t.bytes)+growBytes, t.cfg.MaxBytes, bytes.Little(), limits.TopicBytes)
	}
	return nil
}

// releaseLocked takes an entry that is replaced or removed out of the
// share that held it.
func (t *Store) releaseLocked(e *entry) {
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

// Delete removes wr.Key for writer wr.Writer (wr.Raw and wr.Holder are
// unused); see [Store.Set] for wr.Seq.
func (t *Store) Delete(wr Write) (ObjectVersion, bool, error) {
	w, epoch, seq, key, header := wr.Writer, wr.Epoch, wr.Seq, wr.Key, wr.Header
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessionLostLocked(w) {
		return ObjectVersion{}, false, ErrWriterSessionLost
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
func (t *Store) removeEntryLocked(key string, e *entry, ch *change) {
	delete(t.entries, key)
	t.bytes -= len(e.object)
	t.releaseLocked(e)
	old := e.change.sel
	if t.index != nil {
		t.index.unfileKey(key, old)
	}
	t.deletes.Add(1)
	t.publishLocked(ch, old)
	t.history.bury(ch, old, t.host.Now())
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
func (t *Store) publishLocked(ch *change, old selValues) {
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
		t.host.Goroutines.Add(1)
		go t.fanOut()
	}
}

// fanOut hands the pending changes to every watcher, round after round,
// until none are pending.
func (t *Store) fanOut() {
	defer t.host.Goroutines.Done()
	var batch []*change
	var watchers []*Stream
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

// AddWatcher registers a watch stream whose first frames are the current
// object of every key its selection (nil: every key) matches, or, when the
// topic can resume the watcher from since (a resume point, "" for none),
// only the changes after it; then a synced marker.
func (t *Store) AddWatcher(sess Session, since string, sel Selection) (*Stream, error) {
	ttl := t.host.SessionTTL
	ws := &Stream{
		topic: t, sess: sess, sel: sel, peer: peerKey{sess.Contract(), sess.Peer().Instance}, info: sess.Peer(),
		pingEvery: ttl / 2, writeTimeout: t.host.WriteTimeout,
		needSynced: true, finished: make(chan struct{}),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, apierror.Errorf(apierror.CodeUnavailable, "%s is draining: watch another endpoint", t.host.Component)
	}
	peer := sess.ShareKey()
	bound := share.Bound{Max: int64(t.cfg.MaxWatchers), PerPeer: int64(t.cfg.PeerWatchers)}
	switch bound.Admit(int64(len(t.watchers)), int64(t.peerWatchers[peer]), 1, 1) {
	case share.OverPeer:
		return nil, t.host.overLimit(limits.WatchersPerTopicPerPeer, apierror.CodeResourceExhausted,
			"this peer holds its share of %d watchers of topic %s", bound.PerPeer, t.name)
	case share.OverBound:
		return nil, t.host.overLimit(limits.WatchersPerTopic, apierror.CodeResourceExhausted, "topic %s has its limit of %d watchers", t.name, t.cfg.MaxWatchers)
	case share.Reserved:
		return nil, t.host.overLimit(limits.WatchersPerTopic, apierror.CodeResourceExhausted,
			"topic %s has %d of its %d watchers; the rest are kept for peers holding at most %d", t.name, len(t.watchers), t.cfg.MaxWatchers, bound.Little())
	}
	// The session's and its peer's watchers (Limits), released in
	// removeWatcher.
	if err := t.host.AddWatcher(sess); err != nil {
		return nil, err
	}
	if p, ok := frames.ParseResumePoint(since); ok {
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
func (t *Store) snapshotLocked(sel Selection) []*change {
	if len(sel) == 0 {
		out := make([]*change, 0, len(t.entries))
		for _, e := range t.entries {
			out = append(out, e.change)
		}
		return out
	}
	keys := t.index.selectedKeys(sel)
	out := make([]*change, 0, len(keys))
	for key := range keys {
		if e := t.entries[key]; e != nil && sel.matches(e.change.sel) {
			out = append(out, e.change)
		}
	}
	return out
}

func (t *Store) removeWatcher(ws *Stream) {
	t.mu.Lock()
	if _, ok := t.watchers[ws]; ok {
		delete(t.watchers, ws)
		if peer := ws.sess.ShareKey(); t.peerWatchers[peer] <= 1 {
			delete(t.peerWatchers, peer)
		} else {
			t.peerWatchers[peer]--
		}
		if t.index != nil {
			t.index.removeWatcher(ws)
		}
		t.host.RemoveWatcher(ws.sess)
	}
	t.mu.Unlock()
}

// closeWatchers ends the streams that match with a closing frame giving
// reason, after what they still have to send.
func (t *Store) closeWatchers(match func(*Stream) bool, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ws := range t.watchers {
		if match(ws) {
			ws.closeGracefully(reason)
		}
	}
}

// Drain ends every watch stream with a closing frame and refuses new
// ones: the server is draining.
func (t *Store) Drain() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.closeWatchers(func(*Stream) bool { return true }, protocol.CloseDraining)
}

// Stop closes every watch stream's connection at once and refuses new
// ones: the server stopped. The server then waits for Host.Goroutines.
func (t *Store) Stop() {
	t.mu.Lock()
	t.closed = true
	watchers := make([]*Stream, 0, len(t.watchers))
	for ws := range t.watchers {
		watchers = append(watchers, ws)
	}
	t.mu.Unlock()
	for _, ws := range watchers {
		ws.closeNow()
	}
}

// Get returns the object at key as stored JSON (not to be modified) and
// its version, and whether there is one.
func (t *Store) Get(key string) (raw []byte, ver ObjectVersion, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[key]; e != nil {
		return e.object, e.version, true
	}
	return nil, ObjectVersion{}, false
}

// Keys returns the topic's keys, sorted.
func (t *Store) Keys() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return sortedKeys(t.entries)
}

// Len returns how many keys the topic holds.
func (t *Store) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}
