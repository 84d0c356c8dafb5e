package framework

// What a server's topics offer their users: limits, ServeTopic and
// ServeClientTopic, the views and the in-process writer. The machinery
// (the store, writer bookkeeping, history, selections, watch streams,
// client writes, counters) is in framework/internal/topics, wired to the
// server in topic_server.go; frames are in framework/internal/frames; the
// client's informer is in framework/internal/watch.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/topics"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Defaults of the limits a topic takes ([WithMaxKeys], [WithMaxBytes],
// [WithMaxWatchers]).
const (
	// DefaultTopicMaxKeys matches the default session limit
	// (ServerConfig.MaxSessions), so every client instance of a full server
	// can hold a key.
	DefaultTopicMaxKeys = topics.DefaultMaxKeys
	// DefaultTopicMaxBytes bounds the bytes of a topic's objects: room
	// for DefaultTopicMaxKeys objects of 2.5 KB (a Kubernetes-like node
	// status is 1.5 KB), where the key bound alone let one writer hold
	// 100,000 objects of MaxBodyBytes (4 MiB) each.
	DefaultTopicMaxBytes = topics.DefaultMaxBytes
	// DefaultTopicMaxWatchers bounds the watch streams of one topic.
	DefaultTopicMaxWatchers = topics.DefaultMaxWatchers
	// MaxTopicKeyBytes bounds the length of a key.
	MaxTopicKeyBytes = topics.MaxKeyBytes
)

// TopicOption configures a topic a server holds, given to [ServeTopic] or
// [ServeClientTopic].
type TopicOption interface {
	applyTopic(*topicConfig)
}

// topicConfig is a topic's limits, as its options set them.
type topicConfig = topics.Config

type topicOptionFunc func(*topicConfig)

func (f topicOptionFunc) applyTopic(c *topicConfig) { f(c) }

// WithMaxKeys bounds how many keys the topic holds (default
// [DefaultTopicMaxKeys]); a write that would add a key beyond it is
// answered with resource_exhausted.
func WithMaxKeys(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.MaxKeys = n })
}

// WithMaxBytes bounds the bytes of the objects the topic holds, as
// encoded JSON (default [DefaultTopicMaxBytes]); a write that would take
// them over it is answered with resource_exhausted.
func WithMaxBytes(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.MaxBytes = n })
}

// WithMaxKeysPerWriter bounds the keys one writer identity holds in a
// client-written topic, over all its client instances, kept keys of its
// lost instances included (a writer identity is a peer as for [Limits]:
// its certificate's identity under mutual TLS); default a quarter of
// [WithMaxKeys]. A new key beyond it is answered with
// resource_exhausted. Whatever the shares, the topic's last quarter of
// keys is kept for writers that hold few (docs/security.md, "Shared
// bounds"); a share of all the keys gives that reserve up, for a topic
// one writer fills.
func WithMaxKeysPerWriter(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.WriterKeys = n })
}

// WithMaxBytesPerWriter bounds the bytes of the objects one writer
// identity holds in a client-written topic, as [WithMaxKeysPerWriter]
// bounds its keys; default a quarter of [WithMaxBytes].
func WithMaxBytesPerWriter(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.WriterBytes = n })
}

// WithMaxWatchers bounds the topic's concurrent watch streams (default
// [DefaultTopicMaxWatchers]); a watch beyond it is answered with
// resource_exhausted. The bound is shared by peers as sessions are
// (docs/security.md, "Shared bounds"): one peer holds at most its share
// ([WithMaxWatchersPerPeer]), and the last quarter is kept for peers that
// hold few watchers of the topic, so a few stolen certificates cannot take
// every slot and leave each kubelet's watch of its own pods refused.
func WithMaxWatchers(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.MaxWatchers = n })
}

// WithMaxWatchersPerPeer bounds the watch streams of the topic one peer
// holds, over all its sessions (a peer as for [Limits]: its certificate's
// identity under mutual TLS); default a quarter of [WithMaxWatchers]. A
// watch beyond it is answered with resource_exhausted, counted as
// watchers_per_topic_per_peer. A share of every watcher gives the reserve
// up.
func WithMaxWatchersPerPeer(n int) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.PeerWatchers = n })
}

// Defaults of how much deletion history a topic keeps for resuming
// watchers ([WithTombstones]).
const (
	// DefaultTopicTombstones bounds the deleted keys a topic remembers.
	DefaultTopicTombstones = topics.DefaultTombstones
	// DefaultTopicTombstoneAge bounds how long it remembers each.
	DefaultTopicTombstoneAge = topics.DefaultTombstoneAge
)

// WithTombstones bounds how many deleted keys the topic remembers, and for
// how long (defaults [DefaultTopicTombstones], [DefaultTopicTombstoneAge]),
// so that a watcher cut off for a while is sent only what changed when it
// comes back: a watcher whose resume point is older than the oldest delete
// remembered is sent a snapshot instead.
func WithTombstones(n int, age time.Duration) TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.Tombstones, c.TombstoneAge = n, age })
}

// newTopicConfig applies opts to the defaults (topics.Config.WithDefaults).
func newTopicConfig(opts []TopicOption) topicConfig {
	var cfg topicConfig
	for _, o := range opts {
		o.applyTopic(&cfg)
	}
	return cfg.WithDefaults()
}

// ObjectVersion identifies one write of a topic object: the epoch of the
// writer that made it, which changes when the writer restarts, and the
// writer's sequence number, which grows with every write it makes in that
// epoch. There is no version across writers or keys.
type ObjectVersion = frames.ObjectVersion

// ServeTopic makes s hold a topic whose writer is the server and returns
// its writer; watchers reach it at
// GET /lockstep/<contract>/<version>/watch/<topic>. The writer's identity is
// the server's (component, instance), and its epoch is new in every
// process. For a contract that derives from compatible versions
// ([NewCompatibleContract]), s also serves the earlier versions' forms of
// the topic, each change converted down once per version. It panics on
// setup mistakes: a topic c does not declare, a topic the client writes, or
// one registered twice.
func ServeTopic[T any](s *Server, c *Contract, topic string, opts ...TopicOption) *TopicWriter[T] {
	w := serveTopic[T](s, c, topic, opts)
	serveCompatibleTopic(s, c, topic, w, opts)
	return w
}

// serveTopic is [ServeTopic] for c alone, without its compatible versions.
func serveTopic[T any](s *Server, c *Contract, topic string, opts []TopicOption) *TopicWriter[T] {
	t := s.registerTopic(c, topic, handshake.RoleServer, opts, nil)
	w := &TopicWriter[T]{
		TopicView:  &TopicView[T]{store: t},
		writer:     topics.WriterID{Component: s.cfg.Component, Instance: s.cfg.Instance},
		contract:   c,
		epoch:      randomID(8),
		key:        topics.KeyReader[T](t.Decl().Key),
		propagator: s.cfg.Propagator,
	}
	s.mu.Lock()
	t.Writer = w
	s.mu.Unlock()
	s.topicServed(c, topic, w)
	return w
}

// ServeClientTopic makes s hold a topic whose writers are client instances,
// which write it with POST /lockstep/<contract>/<version>/topics/<topic>
// (see [TopicPublisher]), and returns a read-only view of it. Each object is
// validated against the topic's schema and decoded into T, as a call's
// request is, or decoded and checked by its Validate method when T
// implements [Validator]: an object T cannot hold (an integer beyond its
// range) is refused, not stored for the view and typed watchers to skip.
// It panics on setup mistakes, like [ServeTopic].
func ServeClientTopic[T any](s *Server, c *Contract, topic string, opts ...TopicOption) *TopicView[T] {
	decl, _ := c.Topic(topic) // registerTopic panics for a topic c does not declare
	t := s.registerTopic(c, topic, handshake.RoleClient, opts, func(raw []byte) error { return decodeMessage(c, decl.Object, raw, new(T)) })
	return &TopicView[T]{store: t}
}

// TopicView reads the current objects of a topic its server holds.
// Objects are decoded from their stored JSON on every read.
type TopicView[T any] struct {
	store *topicStore
}

// Get returns the object at key, decoded, and whether there is one.
func (v *TopicView[T]) Get(key string) (*T, bool) {
	raw, _, ok := v.store.Get(key)
	if !ok {
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
	_, ver, ok := v.store.Get(key)
	return ver, ok
}

// Keys returns the topic's keys, sorted.
func (v *TopicView[T]) Keys() []string { return v.store.Keys() }

// Len returns how many keys the topic holds.
func (v *TopicView[T]) Len() int { return v.store.Len() }

// TopicWriter writes a topic whose writer is the server, in process. It is
// safe for concurrent use; writes of one key are applied in the order they
// are made. A write never waits for watchers: each watcher is sent the
// latest state of every key it has not seen yet, at its own pace.
type TopicWriter[T any] struct {
	*TopicView[T]
	writer topics.WriterID
	// contract is the contract version the topic is served at, for
	// ForkTopic.
	contract *Contract
	epoch    string
	key      func(obj *T, raw []byte) (string, error)
	// propagator carries a write's trace context to its watchers
	// (ServerConfig.Propagator).
	propagator Propagator

	// forks are the earlier versions' forms of this topic ([ForkTopic]):
	// each change is converted once and written to each. mirrorMu keeps a
	// key's changes in the same order in every form. It is taken before
	// the store's lock (see topicStore.mu for the order).
	mirrorMu sync.Mutex
	forks    []topicFork[T]
}

// Epoch returns the writer's epoch, new in every process.
func (w *TopicWriter[T]) Epoch() string { return w.epoch }

// Set stores obj under the key in its key field, replacing what was there,
// and sends it to every watcher. Errors: invalid_argument when obj does not
// encode, its key field is missing or not a non-empty string, or its
// Validate method ([Validator]) fails; resource_exhausted when the topic
// holds its limit of keys ([WithMaxKeys]) or of bytes ([WithMaxBytes]).
func (w *TopicWriter[T]) Set(obj *T) error { return w.set(context.Background(), "", obj) }

// SetContext is [TopicWriter.Set] made on behalf of ctx's request: with
// ServerConfig.Propagator set, the change carries what ctx holds (its trace
// context) to every watcher, so that their deliveries link to this write.
// The key stays the server's own, as with Set.
func (w *TopicWriter[T]) SetContext(ctx context.Context, obj *T) error { return w.set(ctx, "", obj) }

// SetFor stores obj as [TopicWriter.Set] does, on behalf of the peer whose
// request ctx carries ([PeerFromContext]): a handler that publishes what a
// peer reported (a node controller's health of a kubelet's node) charges
// the key to that peer, so that one peer, or one stolen certificate,
// cannot fill the topic for everyone. The key counts against the peer's
// share of the topic's keys and bytes ([WithMaxKeysPerWriter],
// [WithMaxBytesPerWriter], a quarter of the topic's by default), over all
// its sessions, and the topic's last quarter is kept for peers holding
// little, as for a client-written topic's writers (docs/security.md,
// "Shared bounds"); beyond them the write is refused resource_exhausted,
// counted as topic_keys_per_writer or topic_bytes_per_writer (topic_keys
// or topic_bytes for the reserve). The key stays the server's: it counts
// against the peer whose write set it last, until the server sets it
// itself ([TopicWriter.Set]), another peer's write sets it, or it is
// deleted. A ctx that carries no peer is the server's own write, as Set.
// The change carries ctx's trace context, as with [TopicWriter.SetContext].
func (w *TopicWriter[T]) SetFor(ctx context.Context, obj *T) error {
	holder := ""
	if p := PeerFromContext(ctx); p != nil {
		holder = shareKey(p)
	}
	return w.set(ctx, holder, obj)
}

// set stores obj, charged to holder ("" for the server itself), carrying
// ctx's trace context to the watchers.
func (w *TopicWriter[T]) set(ctx context.Context, holder string, obj *T) error {
	if obj == nil {
		return Errorf(CodeInvalidArgument, "%s: nil object", w.store.Name())
	}
	if val, ok := any(obj).(Validator); ok {
		if err := val.Validate(); err != nil {
			return Errorf(CodeInvalidArgument, "%s: %v", w.store.Decl().Object, err)
		}
	}
	raw, err := marshal(obj)
	if err != nil {
		return Errorf(CodeInvalidArgument, "%s does not encode: %v", w.store.Decl().Object, err)
	}
	key, err := w.key(obj, raw)
	if err != nil {
		return err
	}
	if w.hasForks() {
		w.mirrorMu.Lock()
		defer w.mirrorMu.Unlock()
	}
	header := changeHeader(w.propagator, ctx)
	if _, _, err = w.store.Set(topics.Write{Writer: w.writer, Holder: holder, Epoch: w.epoch, Key: key, Raw: raw, Header: header}); err != nil {
		return err
	}
	return w.mirrorSet(ctx, obj)
}

// Delete removes the object at key and tells every watcher; deleting a key
// that is not there does nothing.
func (w *TopicWriter[T]) Delete(key string) error {
	return w.DeleteContext(context.Background(), key)
}

// DeleteContext is [TopicWriter.Delete] made on behalf of ctx's request,
// as [TopicWriter.SetContext] is.
func (w *TopicWriter[T]) DeleteContext(ctx context.Context, key string) error {
	if w.hasForks() {
		w.mirrorMu.Lock()
		defer w.mirrorMu.Unlock()
	}
	if _, _, err := w.store.Delete(topics.Write{Writer: w.writer, Epoch: w.epoch, Key: key, Header: changeHeader(w.propagator, ctx)}); err != nil {
		return err
	}
	return w.mirrorDelete(ctx, key)
}

// checkKey checks a topic key: non-empty, valid UTF-8, at most
// [MaxTopicKeyBytes] bytes (topics.CheckKey).
func checkKey(key string) error { return topics.CheckKey(key) }

// MaxSelectorValueBytes bounds a selector value a watch names, as
// [MaxTopicKeyBytes] bounds a key: a watcher's selection is kept for as
// long as it watches, and shown on the status page, so a value is a
// resource its peer holds. An object field worth selecting on (a node
// name, a phase) is far shorter.
const MaxSelectorValueBytes = topics.MaxSelectorValueBytes

// checkSelectors checks a topic's declared selectors (topics.CheckSelectors).
func checkSelectors(sel []string) error { return topics.CheckSelectors(sel) }

// Earlier versions' forms of a server-written topic (ForkTopic,
// ForkServedTopic): each change is converted once and written to each.

// topicFork is one earlier version's form of a server-written topic.
type topicFork[T any] struct {
	version string
	store   *topicStore
	// set and del write a change to this form, carrying ctx's trace
	// context as the current form's change does.
	set func(ctx context.Context, obj *T) error
	del func(ctx context.Context, key string) error
}

// ForkTopic makes s also serve a server-written topic at an earlier contract
// version, for watchers still at that version (fork mode). Every change
// written through current is converted down once, by down, and written to
// the earlier version's topic: the cost is per change, not per watcher;
// what current holds already is converted when ForkTopic is called. It
// returns a read-only view of the earlier form. Call it before the server
// starts; it panics on setup mistakes, like [ServeTopic].
// [ForkServedTopic] is the same for a writer s is yet to have.
func ForkTopic[Old, New any](s *Server, old *Contract, current *TopicWriter[New], down func(*New) (*Old, error), opts ...TopicOption) *TopicView[Old] {
	name := current.store.Name()
	newer := current.contract
	if err := checkForkPair(old, newer); err != nil {
		panic("lockstep: " + err.Error())
	}
	if _, ok := old.Topic(name); !ok {
		panic(fmt.Sprintf("lockstep: contract %s %s declares no topic %s", old.Name(), old.Version(), name))
	}
	return mirrorTopic(s, old, current, down, opts).TopicView
}

// mirrorTopic serves topic at the earlier version old and mirrors every
// change written through current into it, converted down once; what
// current holds already is written in the earlier form too, so the two
// forms hold the same keys whenever the mirror was made. It returns the
// earlier form's writer, so that a yet earlier compatible version can be
// mirrored from it in turn. Fork mode and compatible versions share it.
func mirrorTopic[Old, New any](s *Server, old *Contract, current *TopicWriter[New], down func(*New) (*Old, error), opts []TopicOption) *TopicWriter[Old] {
	name := current.store.Name()
	newer := current.contract
	earlier := serveTopic[Old](s, old, name, opts) // the earlier version alone: its own chain is mirrored from it in turn
	earlier.store.SetAttached(current.Attached())  // one writer, attached in every form or none
	current.mirrorMu.Lock()
	defer current.mirrorMu.Unlock()
	f := topicFork[New]{
		version: old.Version(),
		store:   earlier.store,
		set: func(ctx context.Context, obj *New) error {
			o, err := down(obj)
			if err != nil {
				return convError(name, newer.Version(), old.Version(), err)
			}
			return earlier.SetContext(ctx, o)
		},
		del: earlier.DeleteContext,
	}
	for _, key := range current.Keys() {
		if obj, ok := current.Get(key); ok {
			if err := f.set(context.Background(), obj); err != nil {
				panic(fmt.Sprintf("lockstep: topic %s: %s at %s: %v", name, key, old.Version(), err))
			}
		}
	}
	current.forks = append(current.forks, f)
	return earlier
}

// topicForkDecl is a topic a server serves at an earlier version by
// converting its current form down ([ForkServedTopic]), waiting for the
// current form's writer if s has none yet.
type topicForkDecl struct {
	old, current *Contract
	name         string
	// attach forks the writer of the current form, a *TopicWriter[New].
	attach   func(w any)
	attached bool
}

// ForkServedTopic makes s serve a server-written topic at the earlier
// version old as [ForkTopic] does, converting each change down once, from
// the writer of its current form: the one s has, or the one [ServeTopic]
// gives it later for current (the earlier form takes the same limits).
// Either order works, so a fork's wiring (the generated RegisterFork) need
// not know where the writer is made. [Server.Start] refuses a forked topic
// whose current form is never served, naming it. It panics on setup
// mistakes, like [ForkTopic]; a writer of another type than New is one.
//
// For generated code: lockstep-gen emits one per topic of a fork (forkFrom) in RegisterFork.
func ForkServedTopic[Old, New any](s *Server, old, current *Contract, topic string, down func(*New) (*Old, error)) {
	mustForkOf(old, current)
	for _, c := range []*Contract{old, current} {
		decl, ok := c.Topic(topic)
		if !ok {
			panic(fmt.Sprintf("lockstep: contract %s %s declares no topic %s", c.Name(), c.Version(), topic))
		}
		if decl.Writer != handshake.RoleServer {
			panic(fmt.Sprintf("lockstep: topic %s is written by the client at %s; only server-written topics are forked", topic, c.Version()))
		}
	}
	d := &topicForkDecl{old: old, current: current, name: topic, attach: func(w any) {
		writer, ok := w.(*TopicWriter[New])
		if !ok {
			panic(fmt.Sprintf("lockstep: topic %s of %s %s is served as %T, but its fork to %s converts %T",
				topic, current.Name(), current.Version(), w, old.Version(), new(New)))
		}
		ForkTopic(s, old, writer, down, topicOptionFunc(func(c *topicConfig) { *c = writer.store.Config() }))
	}}
	s.mu.Lock()
	s.servedVersionLocked(current, "topic forks")
	for _, f := range s.topicForks {
		if f.current.Name() == current.Name() && f.old.Version() == old.Version() && f.name == topic {
			s.mu.Unlock()
			panic(fmt.Sprintf("lockstep: %s %s topic %s forked twice", old.Name(), old.Version(), topic))
		}
	}
	s.topicForks = append(s.topicForks, d)
	w := s.topicWriterLocked(current, topic)
	if w != nil {
		d.attached = true
	}
	s.mu.Unlock()
	if w != nil {
		d.attach(w)
	}
}

// topicWriterLocked returns the writer of a server-written topic s serves
// at c's version (a *TopicWriter[T]), or nil. s.mu must be held.
func (s *Server) topicWriterLocked(c *Contract, topic string) any {
	sc := s.contracts[c.Name()]
	if sc == nil {
		return nil
	}
	sv := sc.versions[c.Version()]
	if sv == nil || sv.topics[topic] == nil {
		return nil
	}
	return sv.topics[topic].Writer
}

// topicServed attaches the forks waiting for the writer w of topic at c's
// version ([ForkServedTopic]).
func (s *Server) topicServed(c *Contract, topic string, w any) {
	s.mu.Lock()
	var due []*topicForkDecl
	for _, f := range s.topicForks {
		if !f.attached && f.name == topic && f.current.Name() == c.Name() && f.current.Version() == c.Version() {
			f.attached = true
			due = append(due, f)
		}
	}
	s.mu.Unlock()
	for _, f := range due {
		f.attach(w)
	}
}

func (w *TopicWriter[T]) hasForks() bool {
	w.mirrorMu.Lock()
	defer w.mirrorMu.Unlock()
	return len(w.forks) > 0
}

// mirrorSet writes obj's earlier forms; the current form is already written,
// so a failure names the version that missed the change.
func (w *TopicWriter[T]) mirrorSet(ctx context.Context, obj *T) error {
	var errs []error
	for _, f := range w.forks {
		if err := f.set(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("the %s form: %w", f.version, err))
		}
	}
	return mirrorError(w, errors.Join(errs...))
}

func (w *TopicWriter[T]) mirrorDelete(ctx context.Context, key string) error {
	var errs []error
	for _, f := range w.forks {
		if err := f.del(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("the %s form: %w", f.version, err))
		}
	}
	return mirrorError(w, errors.Join(errs...))
}

func mirrorError[T any](w *TopicWriter[T], err error) error {
	if err == nil {
		return nil
	}
	return NewError(CodeOf(err), fmt.Errorf("%s: written at %s, but %w", w.store.Name(), w.store.Version(), err))
}

// Writer-aware routing. Replicas do not share topics, so a watcher of a
// server-written topic must watch a replica whose writer is attached (the
// elected leader, say): the others hold no topic, or a stale one. A server
// says whether each topic has a live writer in the synced frame of every
// watch stream, in every heartbeat answer and in its status; an informer
// uses it to pick its replica, to move when the writer moves, and to never
// take a writer-less replica's topic for the truth (docs/topics.md).

// Attach makes the server's writer of the topic live: watchers are told,
// in the synced frame and in heartbeat answers, that this replica's topic
// is the one to watch. A writer is attached when [ServeTopic] makes it,
// unless given [WithWriterDetached]. A replica that takes over writing (a
// newly elected leader) writes its state and then attaches.
func (w *TopicWriter[T]) Attach() {
	w.store.SetAttached(true)
	for _, f := range w.forks {
		f.store.SetAttached(true)
	}
}

// Detach makes the topic writer-less, as on a replica that lost its
// leadership: the objects stay as they are (watchers see nothing change,
// so none of them is shown an empty topic), but informers move to a
// replica whose writer is attached as soon as one is, and none syncs from
// this one meanwhile. Writes are still applied, so a detached writer can
// prepare its state before it attaches.
func (w *TopicWriter[T]) Detach() {
	w.store.SetAttached(false)
	for _, f := range w.forks {
		f.store.SetAttached(false)
	}
}

// Attached reports whether the writer is attached.
func (w *TopicWriter[T]) Attached() bool { return w.store.WriterLive() }

// WithWriterDetached makes [ServeTopic]'s writer start detached (see
// [TopicWriter.Detach]): a replica that is not the elected writer yet.
func WithWriterDetached() TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.Detached = true })
}
