package framework

// What a server's topics offer their users: limits, ServeTopic and
// ServeClientTopic, the views and the in-process writer. The machinery
// (the store, writer bookkeeping, history, selections, watch streams,
// client writes, counters) is in framework/internal/topics, wired to the
// server in topic_server.go; frames are in framework/internal/frames; the
// client's informer is in framework/internal/watch.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/identity"
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
	p := s.cfg.Propagator
	w := topics.NewWriter(t, topics.WriterConfig[T]{
		ID:      topics.WriterID{Component: s.cfg.Component, Instance: s.cfg.Instance},
		Epoch:   randomID(8),
		Key:     topics.KeyReader[T](t.Decl().Key),
		Marshal: marshal,
		Header:  func(ctx context.Context) []byte { return changeHeader(p, ctx) },
		Holder: func(ctx context.Context) string {
			if peer := PeerFromContext(ctx); peer != nil {
				return identity.ShareKey(peer) // its limits' key, or its identity
			}
			return ""
		},
		Contract: c,
	})
	s.topics.Served(t, w) // and attaches the forks waiting for w
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
	return topics.NewView[T](t)
}

// TopicView reads the current objects of a topic its server holds:
// Get, Version, Keys and Len. Objects are decoded from their stored JSON
// on every read.
type TopicView[T any] = topics.View[T]

// TopicWriter writes a topic whose writer is the server, in process. It is
// safe for concurrent use; writes of one key are applied in the order they
// are made. A write never waits for watchers: each watcher is sent the
// latest state of every key it has not seen yet, at its own pace.
//
// Set stores an object under the key in its key field and sends it to
// every watcher; errors: invalid_argument when it does not encode, its key
// field is missing or not a non-empty string, or its Validate method
// ([Validator]) fails; resource_exhausted when the topic holds its limit
// of keys ([WithMaxKeys]) or of bytes ([WithMaxBytes]). SetContext and
// DeleteContext carry ctx's trace context (ServerConfig.Propagator) to
// every watcher. SetFor charges the key to the peer ctx carries
// ([PeerFromContext]) against its share of the topic ([WithMaxKeysPerWriter],
// [WithMaxBytesPerWriter]; docs/security.md, "Shared bounds"). Attach and
// Detach make the writer live or writer-less ([WithWriterDetached]), in
// every form of the topic ([ForkTopic]). Epoch is new in every process.
type TopicWriter[T any] = topics.Writer[T]

// checkKey checks a topic key: non-empty, valid UTF-8, at most
// [MaxTopicKeyBytes] bytes (topics.CheckKey).
func checkKey(key string) error { return topics.CheckKey(key) }

// MaxSelectorValueBytes bounds a selector value a watch names, as
// [MaxTopicKeyBytes] bounds a key: a watcher's selection is kept for as
// long as it watches, and shown on the status page, so a value is a
// resource its peer holds. An object field worth selecting on (a node
// name, a phase) is far shorter.
const MaxSelectorValueBytes = topics.MaxSelectorValueBytes

// Earlier versions' forms of a server-written topic (ForkTopic,
// ForkServedTopic): each change is converted once and written to each.

// ForkTopic makes s also serve a server-written topic at an earlier contract
// version, for watchers still at that version (fork mode). Every change
// written through current is converted down once, by down, and written to
// the earlier version's topic: the cost is per change, not per watcher;
// what current holds already is converted when ForkTopic is called. It
// returns a read-only view of the earlier form. Call it before the server
// starts; it panics on setup mistakes, like [ServeTopic].
// [ForkServedTopic] is the same for a writer s is yet to have.
func ForkTopic[Old, New any](s *Server, old *Contract, current *TopicWriter[New], down func(*New) (*Old, error), opts ...TopicOption) *TopicView[Old] {
	name := topics.StoreOf(current.TopicView).Name()
	newer := topics.ContractOf(current).(*Contract)
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
	name := topics.StoreOf(current.TopicView).Name()
	newer := topics.ContractOf(current).(*Contract)
	earlier := serveTopic[Old](s, old, name, opts)                    // the earlier version alone: its own chain is mirrored from it in turn
	topics.StoreOf(earlier.TopicView).SetAttached(current.Attached()) // one writer, attached in every form or none
	err := current.AddFork(topics.Fork[New]{
		Version: old.Version(),
		Store:   topics.StoreOf(earlier.TopicView),
		Set: func(ctx context.Context, obj *New) error {
			o, err := down(obj)
			if err != nil {
				return convError(name, newer.Version(), old.Version(), err)
			}
			return earlier.SetContext(ctx, o)
		},
		Del: earlier.DeleteContext,
	})
	if err != nil {
		panic(fmt.Sprintf("lockstep: topic %s: %v", name, err))
	}
	return earlier
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
	f := &topics.PendingFork{Contract: current.Name(), Old: old.Version(), Current: current.Version(), Topic: topic, Attach: func(w any) {
		writer, ok := w.(*TopicWriter[New])
		if !ok {
			panic(fmt.Sprintf("lockstep: topic %s of %s %s is served as %s, but its fork to %s converts %T",
				topic, current.Name(), current.Version(), writerTypeName(w), old.Version(), new(New)))
		}
		ForkTopic(s, old, writer, down, topicOptionFunc(func(c *topicConfig) { *c = topics.StoreOf(writer.TopicView).Config() }))
	}}
	s.mu.Lock()
	s.servedVersionLocked(current, "topic forks")
	w, err := s.topics.AddFork(f)
	s.mu.Unlock()
	if err != nil {
		panic("lockstep: " + err.Error())
	}
	if w != nil {
		f.Attach(w)
	}
}

// writerTypeName is w's type as the framework's users name it: a
// *framework.TopicWriter[T] (an alias of *topics.Writer[T]).
func writerTypeName(w any) string {
	return strings.Replace(fmt.Sprintf("%T", w), "*topics.Writer[", "*framework.TopicWriter[", 1)
}

// Writer-aware routing. Replicas do not share topics, so a watcher of a
// server-written topic must watch a replica whose writer is attached (the
// elected leader, say): the others hold no topic, or a stale one. A server
// says whether each topic has a live writer in the synced frame of every
// watch stream, in every heartbeat answer and in its status; an informer
// uses it to pick its replica, to move when the writer moves, and to never
// take a writer-less replica's topic for the truth (docs/topics.md).

// WithWriterDetached makes [ServeTopic]'s writer start detached (see
// [TopicWriter.Detach]): a replica that is not the elected writer yet.
func WithWriterDetached() TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.Detached = true })
}
