package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Defaults of the limits a topic takes ([WithMaxKeys], [WithMaxWatchers]).
const (
	// DefaultTopicMaxKeys matches the default session limit
	// (ServerConfig.MaxSessions), so every client instance of a full server
	// can hold a key.
	DefaultTopicMaxKeys = 100000
	// DefaultTopicMaxWatchers bounds the watch streams of one topic.
	DefaultTopicMaxWatchers = 10000
	// MaxTopicKeyBytes bounds the length of a key.
	MaxTopicKeyBytes = 1024
)

// TopicOption configures a topic a server holds, given to [ServeTopic] or
// [ServeClientTopic].
type TopicOption interface {
	applyTopic(*topicConfig)
}

type topicConfig struct {
	maxKeys     int
	maxWatchers int
}

type topicOptionFunc func(*topicConfig)

func (f topicOptionFunc) applyTopic(c *topicConfig) { f(c) }

// WithMaxKeys bounds how many keys the topic holds (default
// [DefaultTopicMaxKeys]); a write that would add a key beyond it is
// answered with resource_exhausted.
func WithMaxKeys(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.maxKeys = n })
}

// WithMaxWatchers bounds the topic's concurrent watch streams (default
// [DefaultTopicMaxWatchers]); a watch beyond it is answered with
// resource_exhausted.
func WithMaxWatchers(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.maxWatchers = n })
}

func newTopicConfig(opts []TopicOption) topicConfig {
	cfg := topicConfig{maxKeys: DefaultTopicMaxKeys, maxWatchers: DefaultTopicMaxWatchers}
	for _, o := range opts {
		o.applyTopic(&cfg)
	}
	if cfg.maxKeys <= 0 {
		cfg.maxKeys = DefaultTopicMaxKeys
	}
	if cfg.maxWatchers <= 0 {
		cfg.maxWatchers = DefaultTopicMaxWatchers
	}
	return cfg
}

// ObjectVersion identifies one write of a topic object: the epoch of the
// writer that made it, which changes when the writer restarts, and the
// writer's sequence number, which grows with every write it makes in that
// epoch. There is no version across writers or keys.
type ObjectVersion struct {
	Epoch string `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

// writerKey identifies a topic writer by (component, instance), not by
// session, so a writer that handshakes again keeps its keys.
type writerKey struct{ component, instance string }

// writerState is what a topic knows of one writer.
type writerState struct {
	epoch string
	seq   uint64              // the highest sequence seen in epoch
	keys  map[string]struct{} // the keys it owns
}

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

	mu       sync.Mutex
	entries  map[string]*topicEntry
	writers  map[writerKey]*writerState
	watchers map[*watchStream]struct{}
	closed   bool // the server is draining or stopped: no new watchers

	// gen counts the changes applied. fan holds the latest change of each
	// key not yet handed to the watchers (fanIndex: its place); fanning
	// says whether the fan-out goroutine runs.
	gen      uint64
	fan      []*topicChange
	fanIndex map[string]int
	fanning  bool

	sets, deletes atomic.Uint64
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

// ServeTopic makes s hold a topic whose writer is the server and returns
// its writer; watchers reach it at
// GET /lockstep/<contract>/<version>/watch/<topic>. The writer's identity is
// the server's (component, instance), and its epoch is new in every
// process. It panics on setup mistakes: a topic c does not declare, a topic
// the client writes, or one registered twice.
func ServeTopic[T any](s *Server, c *Contract, topic string, opts ...TopicOption) *TopicWriter[T] {
	t := s.registerTopic(c, topic, handshake.RoleServer, opts)
	return &TopicWriter[T]{
		TopicView: &TopicView[T]{store: t},
		writer:    writerKey{s.cfg.Component, s.cfg.Instance},
		epoch:     randomID(8),
		key:       keyReader[T](t.decl.Key),
	}
}

// ServeClientTopic makes s hold a topic whose writers are client instances,
// which write it with POST /lockstep/<contract>/<version>/topics/<topic>
// (see [TopicPublisher]), and returns a read-only view of it. Each object is
// validated against the topic's schema, or by its Validate method when T
// implements [Validator]. It panics on setup mistakes, like [ServeTopic].
func ServeClientTopic[T any](s *Server, c *Contract, topic string, opts ...TopicOption) *TopicView[T] {
	t := s.registerTopic(c, topic, handshake.RoleClient, opts)
	t.validate = func(raw []byte) error {
		var v any = new(T)
		if val, ok := v.(Validator); ok {
			if err := json.Unmarshal(raw, v); err != nil {
				return Errorf(CodeInvalidArgument, "%s does not decode: %v", t.decl.Object, err)
			}
			if err := val.Validate(); err != nil {
				if CodeOf(err) == CodeInvalidArgument {
					return err
				}
				return Errorf(CodeInvalidArgument, "%s: %v", t.decl.Object, err)
			}
			return nil
		}
		return c.ValidateJSON(t.decl.Object, raw)
	}
	return &TopicView[T]{store: t}
}

// TopicView reads the current objects of a topic its server holds.
// Objects are decoded from their stored JSON on every read.
type TopicView[T any] struct {
	store *topicStore
}

// Get returns the object at key, decoded, and whether there is one.
func (v *TopicView[T]) Get(key string) (*T, bool) {
	v.store.mu.Lock()
	e := v.store.entries[key]
	var raw []byte
	if e != nil {
		raw = e.object
	}
	v.store.mu.Unlock()
	if raw == nil {
		return nil, false
	}
	obj := new(T)
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, false
	}
	return obj, true
}

// Version returns the version of the object at key, and whether there is
// one.
func (v *TopicView[T]) Version(key string) (ObjectVersion, bool) {
	v.store.mu.Lock()
	defer v.store.mu.Unlock()
	if e := v.store.entries[key]; e != nil {
		return e.version, true
	}
	return ObjectVersion{}, false
}

// Keys returns the topic's keys, sorted.
func (v *TopicView[T]) Keys() []string {
	v.store.mu.Lock()
	defer v.store.mu.Unlock()
	return sortedKeys(v.store.entries)
}

// Len returns how many keys the topic holds.
func (v *TopicView[T]) Len() int {
	v.store.mu.Lock()
	defer v.store.mu.Unlock()
	return len(v.store.entries)
}

// TopicWriter writes a topic whose writer is the server, in process. It is
// safe for concurrent use; writes of one key are applied in the order they
// are made. A write never waits for watchers: each watcher is sent the
// latest state of every key it has not seen yet, at its own pace.
type TopicWriter[T any] struct {
	*TopicView[T]
	writer writerKey
	epoch  string
	key    func(obj *T, raw []byte) (string, error)

	// forks are the earlier versions' forms of this topic ([ForkTopic]):
	// each change is converted once and written to each. mirrorMu keeps a
	// key's changes in the same order in every form.
	mirrorMu sync.Mutex
	forks    []topicFork[T]
}

// Epoch returns the writer's epoch, new in every process.
func (w *TopicWriter[T]) Epoch() string { return w.epoch }

// Set stores obj under the key in its key field, replacing what was there,
// and sends it to every watcher. Errors: invalid_argument when obj does not
// encode, its key field is missing or not a non-empty string, or its
// Validate method ([Validator]) fails; resource_exhausted when the topic
// holds its limit of keys ([WithMaxKeys]).
func (w *TopicWriter[T]) Set(obj *T) error {
	if obj == nil {
		return Errorf(CodeInvalidArgument, "%s: nil object", w.store.name)
	}
	if val, ok := any(obj).(Validator); ok {
		if err := val.Validate(); err != nil {
			return Errorf(CodeInvalidArgument, "%s: %v", w.store.decl.Object, err)
		}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return Errorf(CodeInvalidArgument, "%s does not encode: %v", w.store.decl.Object, err)
	}
	key, err := w.key(obj, raw)
	if err != nil {
		return err
	}
	if w.hasForks() {
		w.mirrorMu.Lock()
		defer w.mirrorMu.Unlock()
	}
	if _, _, err = w.store.set(w.writer, w.epoch, 0, key, raw); err != nil {
		return err
	}
	return w.mirrorSet(obj)
}

// Delete removes the object at key and tells every watcher; deleting a key
// that is not there does nothing.
func (w *TopicWriter[T]) Delete(key string) error {
	if w.hasForks() {
		w.mirrorMu.Lock()
		defer w.mirrorMu.Unlock()
	}
	if _, _, err := w.store.del(w.writer, w.epoch, 0, key); err != nil {
		return err
	}
	return w.mirrorDelete(key)
}

// keyReader returns how to read the key of a *T: straight from the
// struct field the key's JSON name belongs to when T is such a struct
// without a JSON method of its own, else from the encoded object.
func keyReader[T any](field string) func(obj *T, raw []byte) (string, error) {
	fromJSON := func(_ *T, raw []byte) (string, error) { return objectKey(raw, field) }
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Struct || typ.Implements(jsonMarshaler) || reflect.PointerTo(typ).Implements(jsonMarshaler) {
		return fromJSON
	}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" && f.Tag.Get("json") != "-" {
			name = f.Name
		}
		if name != field || !f.IsExported() || f.Anonymous {
			continue
		}
		if f.Type.Kind() != reflect.String || strings.Contains(opts, "string") {
			return fromJSON
		}
		index := i
		return func(obj *T, _ []byte) (string, error) {
			key := reflect.ValueOf(obj).Elem().Field(index).String()
			return key, checkKey(key)
		}
	}
	return fromJSON
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// objectKey returns the value of an object's key field, which must be a
// non-empty string of at most [MaxTopicKeyBytes] bytes.
func objectKey(raw []byte, field string) (string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return "", Errorf(CodeInvalidArgument, "topic object must be a JSON object")
	}
	v, ok := fields[field]
	if !ok {
		return "", Errorf(CodeInvalidArgument, "topic object has no key field %q", field)
	}
	var key string
	if err := json.Unmarshal(v, &key); err != nil {
		return "", Errorf(CodeInvalidArgument, "key field %q must be a string, not %s", field, v)
	}
	return key, checkKey(key)
}

func checkKey(key string) error {
	switch {
	case key == "":
		return Errorf(CodeInvalidArgument, "topic key must not be empty")
	case len(key) > MaxTopicKeyBytes:
		return Errorf(CodeInvalidArgument, "topic key of %d bytes exceeds %d", len(key), MaxTopicKeyBytes)
	case !utf8.ValidString(key):
		return Errorf(CodeInvalidArgument, "topic key is not valid UTF-8")
	}
	return nil
}

// checkEpoch checks an epoch a client chose: it is copied into frames
// without escaping.
func checkEpoch(epoch string) error {
	if len(epoch) > 64 {
		return Errorf(CodeInvalidArgument, "epoch of %d bytes exceeds 64", len(epoch))
	}
	for _, r := range epoch {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return Errorf(CodeInvalidArgument, "epoch %q: only letters, digits, '-', '_' and '.' are allowed", epoch)
		}
	}
	return nil
}

// writerFor returns the state of writer w, starting it or moving it to a
// new epoch as needed. A writer seen in a new epoch has restarted: the keys
// of its earlier epoch, except keep, follow the lost-writer policy, since
// their process is gone. An empty epoch continues the current one.
func (t *topicStore) writerFor(w writerKey, epoch, keep string) *writerState {
	ws := t.writers[w]
	if ws == nil {
		if epoch == "" {
			epoch = randomID(8)
		}
		ws = &writerState{epoch: epoch, keys: map[string]struct{}{}}
		t.writers[w] = ws
		return ws
	}
	if epoch != "" && epoch != ws.epoch {
		for key := range ws.keys {
			if key != keep {
				t.loseKeyLocked(ws, key)
			}
		}
		ws.epoch, ws.seq = epoch, 0
	}
	return ws
}

// ownerConflict returns conflict when key belongs to a writer other than w.
func (t *topicStore) ownerConflict(e *topicEntry, w writerKey, key string) error {
	if e == nil || e.writer == w || e.writer == (writerKey{}) {
		return nil
	}
	return Errorf(CodeConflict, "topic %s key %q belongs to %s instance %s", t.name, key, e.writer.component, e.writer.instance).
		WithDetails(map[string]string{"key": key, "component": e.writer.component, "instance": e.writer.instance})
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
		return ObjectVersion{}, false, Errorf(CodeResourceExhausted, "topic %s holds its limit of %d keys", t.name, t.cfg.maxKeys)
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
	ch, object := encodeSetFrame(key, ver, raw)
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
	t.publishLocked(encodeDeleteFrame(key, ver, false))
	return ver, true, nil
}

// loseKeyLocked applies the lost-writer policy to one key of ws: delete it
// (telling watchers), or keep it without an owner, so that any writer may
// take it over.
func (t *topicStore) loseKeyLocked(ws *writerState, key string) {
	delete(ws.keys, key)
	e := t.entries[key]
	if e == nil {
		return
	}
	if t.decl.LostWriter == handshake.LostWriterKeep {
		e.writer = writerKey{}
		return
	}
	delete(t.entries, key)
	t.deletes.Add(1)
	t.publishLocked(encodeDeleteFrame(key, e.version, true))
}

// writerLost applies the lost-writer policy to every key of w.
func (t *topicStore) writerLost(w writerKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.writers[w]
	if ws == nil {
		return
	}
	delete(t.writers, w)
	for key := range ws.keys {
		t.loseKeyLocked(ws, key)
	}
}

// publishLocked hands a change to the topic's fan-out: the writer only
// records it as the latest change of its key, so a write costs the same
// however many watchers there are. The fan-out goroutine, running while
// there is something to hand out, passes the latest changes to every
// watcher in batches.
func (t *topicStore) publishLocked(ch *topicChange) {
	t.gen++
	ch.gen = t.gen
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

// encodeSetFrame builds a set frame once:
// {"type":"set","key":K,"epoch":E,"seq":N,"object":O}\n. It returns the
// change and the object's bytes inside it.
func encodeSetFrame(key string, ver ObjectVersion, raw []byte) (*topicChange, []byte) {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(raw)+len(qk)+len(ver.Epoch)+64)
	b = append(b, `{"type":"set","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	b = append(b, `,"object":`...)
	start := len(b)
	b = append(b, raw...)
	end := len(b)
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b}, b[start:end:end]
}

// encodeDeleteFrame builds a delete frame once:
// {"type":"delete","key":K,"epoch":E,"seq":N[,"writerLost":true]}\n.
func encodeDeleteFrame(key string, ver ObjectVersion, writerLost bool) *topicChange {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(qk)+len(ver.Epoch)+80)
	b = append(b, `{"type":"delete","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	if writerLost {
		b = append(b, `,"writerLost":true`...)
	}
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b}
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// TopicStats describes one topic a server holds, for status pages,
// metrics and tests.
type TopicStats struct {
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
	// Watchers describes each live watch stream.
	Watchers []WatcherStats `json:"watchers"`
}

// WatcherStats describes one watch stream. Queued is bounded by the number
// of keys: a key changed again before it was sent replaces its queued
// change (counted in Coalesced) instead of adding one.
type WatcherStats struct {
	Peer handshake.Peer `json:"peer"`
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

// TopicStats describes every topic the server holds, sorted by contract,
// version and topic.
func (s *Server) TopicStats() []TopicStats {
	var out []TopicStats
	for _, t := range s.allTopics() {
		t.mu.Lock()
		st := TopicStats{
			Contract: t.contract.Name(), Version: t.contract.Version(), Topic: t.name,
			Keys: len(t.entries), Writers: len(t.writers), Sets: t.sets.Load(), Deletes: t.deletes.Load(),
			Watchers: make([]WatcherStats, 0, len(t.watchers)),
		}
		watchers := make([]*watchStream, 0, len(t.watchers))
		for ws := range t.watchers {
			watchers = append(watchers, ws)
		}
		t.mu.Unlock()
		for _, ws := range watchers {
			st.Watchers = append(st.Watchers, ws.stats())
		}
		sort.Slice(st.Watchers, func(i, j int) bool { return st.Watchers[i].Peer.Instance < st.Watchers[j].Peer.Instance })
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Contract != b.Contract {
			return a.Contract < b.Contract
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Topic < b.Topic
	})
	return out
}

// topicWriteRequest is the body of POST
// /lockstep/<contract>/<version>/topics/<Topic>: exactly one of set and
// delete. Epoch and seq are the writer's (optional: the server continues
// the writer's current epoch and sequence without them).
type topicWriteRequest struct {
	Epoch  string          `json:"epoch,omitempty"`
	Seq    uint64          `json:"seq,omitempty"`
	Set    json.RawMessage `json:"set,omitempty"`
	Delete *string         `json:"delete,omitempty"`
}

// topicWriteAnswer is the answer to a topic write: the key, the version
// the server holds for it, and whether this write changed anything.
type topicWriteAnswer struct {
	Key     string `json:"key"`
	Epoch   string `json:"epoch"`
	Seq     uint64 `json:"seq"`
	Applied bool   `json:"applied"`
}

// topicRequest finds the topic and session of a topic request, with the
// checks of a call: contract, version, topic, session, agreed version.
func (s *Server) topicRequest(r *http.Request) (*topicStore, *session, error) {
	contract, ver, topic := chi.URLParam(r, "contract"), chi.URLParam(r, "version"), chi.URLParam(r, "topic")
	sc := s.lookup(contract)
	if sc == nil {
		return nil, nil, Errorf(CodeNotFound, "%s does not serve contract %q", s.cfg.Component, contract)
	}
	s.mu.RLock()
	sv := sc.versions[ver]
	var t *topicStore
	if sv != nil {
		t = sv.topics[topic]
	}
	s.mu.RUnlock()
	if sv == nil {
		return nil, nil, Errorf(CodeIncompatiblePeer, "%s does not speak %s %s: handshake again", s.cfg.Component, contract, ver)
	}
	if t == nil {
		if _, declared := sv.contract.Topic(topic); declared {
			return nil, nil, Errorf(CodeNotFound, "%s does not hold topic %s of %s %s", s.cfg.Component, topic, contract, ver)
		}
		return nil, nil, Errorf(CodeNotFound, "%s %s has no topic %q", contract, ver, topic)
	}
	token := r.Header.Get(protocol.HeaderSession)
	if token == "" {
		return nil, nil, Errorf(CodeHandshakeRequired, "request carries no %s header: handshake first", protocol.HeaderSession)
	}
	sess := s.sessions.get(token)
	if sess == nil || sess.contract != contract {
		return nil, nil, Errorf(CodeHandshakeRequired, "no such %s session (the server may have restarted): handshake again", contract)
	}
	if sess.version != ver {
		return nil, nil, Errorf(CodeIncompatiblePeer, "the session agreed %s %s, but the request is at %s", contract, sess.version, ver)
	}
	return t, sess, nil
}

// serveTopicWrite answers POST /lockstep/<contract>/<version>/topics/<Topic>.
func (s *Server) serveTopicWrite(w http.ResponseWriter, r *http.Request) {
	t, sess, err := s.topicRequest(r)
	if err != nil {
		s.refuse(w, err)
		return
	}
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	sess.inFlight.Add(1)
	defer sess.inFlight.Add(-1)
	sess.lastSeen.Store(s.now())
	if s.draining.Load() {
		s.lastArrival.Store(s.now())
		sess.drainNotified.Store(true)
		s.refuse(w, Errorf(CodeUnavailable, "%s is draining: resend to another endpoint", s.cfg.Component))
		return
	}
	if t.decl.Writer != handshake.RoleClient {
		s.refuse(w, Errorf(CodePermissionDenied, "topic %s is written by %s, not by its clients", t.name, t.contract.Server()))
		return
	}
	body, release, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		s.refuse(w, err)
		return
	}
	ans, err := t.write(writerKey{sess.peer.Component, sess.peer.Instance}, body)
	release()
	draining := s.draining.Load()
	if draining {
		sess.drainNotified.Store(true)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	if draining {
		w.Header().Set(protocol.HeaderDraining, "1")
	}
	out, _ := json.Marshal(ans)
	writeJSON(w, http.StatusOK, out)
}

// write decodes, checks and applies one client write.
func (t *topicStore) write(w writerKey, body []byte) (topicWriteAnswer, error) {
	var req topicWriteRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return topicWriteAnswer{}, Errorf(CodeInvalidArgument, `topic write must be {"set":{…}} or {"delete":"key"}: %v`, err)
	}
	if dec.More() {
		return topicWriteAnswer{}, Errorf(CodeInvalidArgument, "trailing data after the topic write")
	}
	if err := checkEpoch(req.Epoch); err != nil {
		return topicWriteAnswer{}, err
	}
	hasSet := len(req.Set) > 0 && !bytes.Equal(req.Set, []byte("null"))
	if hasSet == (req.Delete != nil) {
		return topicWriteAnswer{}, Errorf(CodeInvalidArgument, `topic write must hold exactly one of "set" and "delete"`)
	}
	var (
		key     string
		ver     ObjectVersion
		applied bool
		err     error
	)
	if req.Delete != nil {
		key = *req.Delete
		if err := checkKey(key); err != nil {
			return topicWriteAnswer{}, err
		}
		ver, applied, err = t.del(w, req.Epoch, req.Seq, key)
	} else {
		var compact bytes.Buffer
		if err := json.Compact(&compact, req.Set); err != nil {
			return topicWriteAnswer{}, Errorf(CodeInvalidArgument, "%s is not valid JSON: %v", t.decl.Object, err)
		}
		raw := compact.Bytes()
		if key, err = objectKey(raw, t.decl.Key); err != nil {
			return topicWriteAnswer{}, err
		}
		if err := t.validate(raw); err != nil {
			return topicWriteAnswer{}, err
		}
		ver, applied, err = t.set(w, req.Epoch, req.Seq, key, raw)
	}
	if err != nil {
		return topicWriteAnswer{}, err
	}
	return topicWriteAnswer{Key: key, Epoch: ver.Epoch, Seq: ver.Seq, Applied: applied}, nil
}

// topicsPeerLost applies the lost-writer policy of every topic of a
// contract to the keys of a client instance whose session was lost, and
// ends that instance's watch streams.
func (s *Server) topicsPeerLost(sess *session) {
	w := writerKey{sess.peer.Component, sess.peer.Instance}
	peer := clientKey{sess.contract, sess.peer.Instance}
	for _, t := range s.allTopics() {
		if t.contract.Name() != sess.contract {
			continue
		}
		if t.decl.Writer == handshake.RoleClient {
			t.writerLost(w)
		}
		t.closeWatchers(func(ws *watchStream) bool { return ws.peer == peer }, protocol.CloseSessionLost)
	}
}
