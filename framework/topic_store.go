package framework

// The topic store: a topic's objects, its watcher set and the fan-out of
// changes to them.

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// topicChange is one change of a key, encoded once as a complete watch
// frame (one NDJSON line) whose bytes every watcher shares.
type topicChange struct {
	key   string
	frame []byte
	gen   uint64 // the topic's count of changes when this one was made
}

// topicEntry is a key's current object. Its bytes live inside the frame
// of the change that set it.
type topicEntry struct {
	writer  writerKey // zero when its writer was lost under the keep policy
	version ObjectVersion
	change  *topicChange
	object  []byte // a sub-slice of change.frame
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

	// mu guards the fields below it. Lock order, outermost first:
	// TopicWriter.mirrorMu, then topicStore.mu, then watchStream.mu.
	// Server.mu is never held with mu: a request finds its topic under
	// Server.mu and releases it before taking mu. Watchers are marked and
	// closed gracefully under mu; a stream drops its own lock before it
	// takes mu to leave the watcher set.
	mu       sync.Mutex
	entries  map[string]*topicEntry
	writers  map[writerKey]*writerState
	watchers map[*watchStream]struct{}
	closed   bool // the server is draining or stopped: no new watchers

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
		writers:  map[writerKey]*writerState{},
		watchers: map[*watchStream]struct{}{},
	}
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

// set stores raw (a JSON object with no insignificant whitespace) under
// key for writer w. seq 0 takes the writer's next sequence. A write older
// than the key's current one from the same writer epoch (a resend) changes
// nothing and reports applied false.
func (t *topicStore) set(w writerKey, epoch string, seq uint64, key string, raw []byte) (ObjectVersion, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[key]
	if err := t.ownerConflict(e, w, key); err != nil {
		return ObjectVersion{}, false, err
	}
	if e == nil && len(t.entries) >= t.cfg.maxKeys {
		return ObjectVersion{}, false, overLimit(t.s.cfg.Metrics, limitTopicKeys, CodeResourceExhausted, "topic %s holds its limit of %d keys", t.name, t.cfg.maxKeys)
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
	ch, object := encodeSetFrame(key, ver, t.gen+1, raw)
	t.entries[key] = &topicEntry{writer: w, version: ver, change: ch, object: object}
	ws.keys[key] = struct{}{}
	t.sets.Add(1)
	t.publishLocked(ch)
	return ver, true, nil
}

// del removes key for writer w; see [topicStore.set] for seq.
func (t *topicStore) del(w writerKey, epoch string, seq uint64, key string) (ObjectVersion, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	delete(t.entries, key)
	delete(ws.keys, key)
	t.deletes.Add(1)
	t.publishDeleteLocked(encodeDeleteFrame(key, ver, t.gen+1, false))
	return ver, true, nil
}

// publishLocked hands a change to the topic's fan-out: the writer only
// records it as the latest change of its key, so a write costs the same
// however many watchers there are. The fan-out goroutine, running while
// there is something to hand out, passes the latest changes to every
// watcher in batches.
func (t *topicStore) publishLocked(ch *topicChange) {
	t.gen = ch.gen
	if len(t.watchers) == 0 || t.closed {
		return // snapshots read the entries; nobody waits for changes
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

// publishDeleteLocked publishes a delete and keeps it as a tombstone, for
// watchers that resume.
func (t *topicStore) publishDeleteLocked(ch *topicChange) {
	t.publishLocked(ch)
	t.history.bury(ch, t.s.now())
}

// fanOut hands the pending changes to every watcher, round after round,
// until none are pending.
func (t *topicStore) fanOut() {
	defer t.s.watchWG.Done()
	var batch []*topicChange
	var watchers []*watchStream
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
		for ws := range t.watchers {
			watchers = append(watchers, ws)
		}
		t.mu.Unlock()
		for _, ws := range watchers {
			ws.markAll(batch)
		}
		clear(batch)
		clear(watchers)
	}
}

// addWatcher registers a watch stream whose first frames are the current
// object of every key, or, when the topic can resume the watcher from
// since (a resume point, "" for none), only the changes after it; then a
// synced marker.
func (t *topicStore) addWatcher(sess *session, since string) (*watchStream, error) {
	ttl := t.s.cfg.SessionTTL
	ws := &watchStream{
		topic: t, sess: sess, peer: clientKey{sess.contract, sess.peer.Instance}, info: sess.peer,
		pingEvery: ttl / 2, writeTimeout: 2 * ttl,
		needSynced: true, finished: make(chan struct{}),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, Errorf(CodeUnavailable, "%s is draining: watch another endpoint", t.s.cfg.Component)
	}
	if len(t.watchers) >= t.cfg.maxWatchers {
		return nil, overLimit(t.s.cfg.Metrics, limitWatchersPerTopic, CodeResourceExhausted, "topic %s has its limit of %d watchers", t.name, t.cfg.maxWatchers)
	}
	// The session's and its peer's watchers (Limits), released in
	// removeWatcher.
	if err := t.s.limits.addWatcher(sess.usage, sess); err != nil {
		return nil, err
	}
	if p, ok := parseResumePoint(since); ok {
		ws.pend, ws.resumed = t.resumeLocked(p)
	}
	if !ws.resumed {
		ws.pend = make([]*topicChange, 0, len(t.entries))
		for _, e := range t.entries {
			ws.pend = append(ws.pend, e.change)
		}
	}
	ws.index = make(map[string]int, len(ws.pend))
	for i, ch := range ws.pend {
		ws.index[ch.key] = i
	}
	ws.maxQueued = len(ws.pend)
	ws.since = t.gen
	t.watchers[ws] = struct{}{}
	return ws, nil
}

func (t *topicStore) removeWatcher(ws *watchStream) {
	t.mu.Lock()
	if _, ok := t.watchers[ws]; ok {
		delete(t.watchers, ws)
		t.s.limits.removeWatcher(ws.sess.usage, ws.sess)
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
