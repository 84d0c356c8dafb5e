package framework

// Watching topics, the public surface: informers, shared informers and
// their factory, and the publisher of a client-written topic. The
// machinery lives in internal/watch: these are its types under the
// framework's names, and the checks of a watch against the contract.

import (
	"context"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/topics"
	"github.com/lockstep-dev/lockstep/framework/internal/watch"
	"github.com/lockstep-dev/lockstep/handshake"
	"github.com/lockstep-dev/lockstep/internal/benchhook"
)

// InformerHandlers are called by an [Informer] as its cache changes, one
// at a time, on the informer's goroutine, in the order the changes arrive.
// A slow handler slows only its own informer: the server then sends it the
// latest state of each key that changed meanwhile, not every change. The
// objects passed are the cache's and must not be modified. Any handler
// (OnAdd for a key the cache did not hold, OnUpdate for a key whose object
// was replaced by a newer version, OnDelete for a key that was deleted or
// that a fresh snapshot no longer holds) may be nil.
type InformerHandlers[T any] = watch.InformerHandlers[T]

// InformerStats counts what an [Informer] did: the streams, resumes and
// frames of its feed, its syncs, decode errors and copies, and its queue
// of changed keys.
type InformerStats = watch.InformerStats

// Informer is a local cache of one topic, kept up to date by a watch
// stream, in the manner of a Kubernetes informer: [Informer.Get],
// [Informer.List], [Informer.HasSynced] and add/update/delete handlers. Its
// stream goes through the client's version-aware routing, waiting while no
// endpoint holds a session at the client's own contract version, and a new
// one opens whenever a stream ends: the endpoint drained or restarted, its
// session was lost, the connection broke or fell silent. A new stream
// resumes from the revision last read, when the same server process still
// remembers every change since (then only those changes are sent);
// otherwise it starts with a full snapshot, which replaces the cache, and
// keys it lacks are reported deleted. There is no "too old" error.
//
// The informers of one client that watch the same topic and selection
// share that stream (a feed): the server sends each change once per
// client, the client reads it once, and every informer decodes the shared
// bytes into objects of its own, with its own cache, handlers and pace.
// For one decode per process, share an informer instead ([InformerFactory]).
type Informer[T any] = watch.Informer[T]

// IndexFunc files an object under zero or more values of one index, as
// client-go's cache.IndexFunc does: [Lister.ByIndex] (name, v) then
// returns every object whose IndexFunc returned v.
type IndexFunc[T any] = watch.IndexFunc[T]

// Indexers names index functions.
type Indexers[T any] = watch.Indexers[T]

// SharedInformer is one watch stream of a topic shared by several handlers
// and listers of one process, made by an [InformerFactory]: the topic is
// sent and decoded once however many parts of the process read it. It
// keeps the objects with their indexes ([SharedInformer.AddIndexers]),
// read through a [Lister], and it re-delivers every object to handlers
// that ask for a resync period.
type SharedInformer[T any] = watch.SharedInformer[T]

// HandlerRegistration is what [SharedInformer.AddEventHandler] returns:
// pass it to [SharedInformer.RemoveEventHandler].
type HandlerRegistration = watch.HandlerRegistration

// Lister reads a shared informer's objects, by key or by index.
type Lister[T any] = watch.Lister[T]

// CacheSyncer is an informer that can be waited for: [Informer] and
// [SharedInformer].
type CacheSyncer = watch.CacheSyncer

// TopicPublisher writes a topic whose writer is the client, on behalf of
// one client instance. It is level-based like the watch side: it holds the
// state its writer wants (the latest object of every key it set and has not
// deleted) and makes every compatible endpoint of the server hold it too,
// through the client's version-aware routing, repeating it in full to an
// endpoint whose session changed. Every write carries the publisher's
// epoch, new for each publisher, and a sequence number that grows with
// each write, so a resend changes nothing; a publisher of the same client
// instance with a new epoch is taken by the server for a restarted writer.
type TopicPublisher[T any] = watch.Publisher[T]

// Watch starts an informer of a topic of c's contract and returns at
// once; use [Informer.WaitForSync] to wait for its first snapshot. It runs
// until ctx ends, [Informer.Stop] is called, or the client is closed. With
// [Select] options it holds only the objects of its selection. Errors:
// not_found for a topic the contract does not declare; invalid_argument for
// a selection the topic's selectors do not allow.
func Watch[T any](ctx context.Context, c *Client, topic string, h InformerHandlers[T], opts ...WatchOption) (*Informer[T], error) {
	r, err := c.watchRequest(topic, opts)
	if err != nil {
		return nil, err
	}
	return watch.Start(ctx, c.watchEnv(), r, h), nil
}

// watchRequest checks a watch of topic with opts against c's contract.
func (c *Client) watchRequest(topic string, opts []WatchOption) (watch.Request, error) {
	decl, ok := c.contract.Topic(topic)
	if !ok {
		return watch.Request{}, Errorf(CodeNotFound, "contract %s %s declares no topic %s", c.contract.Name(), c.contract.Version(), topic)
	}
	o := watch.NewOptions(opts)
	if err := o.CheckDup(topic); err != nil {
		return watch.Request{}, err
	}
	sel, err := topics.NewSelection(topic, decl.Selectors, o.Selection)
	if err != nil {
		return watch.Request{}, err
	}
	return watch.Request{Topic: topic, Query: sel.Key(decl.Selectors), WriterAware: decl.Writer == handshake.RoleServer,
		Own: o.Own, DecodeEach: o.DecodeEach}, nil
}

// WatchOption configures a watch: an [Informer] made by [Watch], or a
// shared one made by [ForTopic]. Only the framework makes them ([Select],
// [DecodeEach]).
type WatchOption = watch.Option

// Select makes a watch see only the objects whose field holds value, as a
// Kubernetes kubelet watches pods with fieldSelector=spec.nodeName=<node>:
// its snapshot holds only those objects, and an object that stops holding
// value (a pod bound to another node) is a delete for it. field must be one
// of the topic's selectors (the contract's selectors: [...]); a value is a
// string's text, an integer in decimal (42), or true or false. Several
// Select options of distinct fields select the objects that match them
// all. Generated packages offer typed forms (SelectNodeName).
func Select(field, value string) WatchOption { return watch.Select(field, value) }

// DecodeEach makes an [Informer] decode every frame of its feed itself,
// as every informer did before feeds decoded once: by default, when the
// object type has a generated DeepCopy method (DeepCopy() *T, which
// codegen generates for messages whose types it can copy), the first
// informer of a feed to take a frame decodes it and each informer,
// that one included, holds a deep copy of its own (strings shared, being
// immutable): the same objects, caches and handlers, for a copy's cost
// rather than a decode's. It is for comparing the two.
func DecodeEach() WatchOption {
	return watch.OptionFunc(func(o *watch.Options) { o.DecodeEach = true })
}

// The benchmarks' own-stream option (internal/benchhook) makes an informer
// open a watch stream of its own rather than share its client's feed.
func init() {
	benchhook.OwnStream = func() any { return watch.OptionFunc(func(o *watch.Options) { o.Own = true }) }
}

// InformerFactory makes shared informers for the topics of one client's
// contract, one stream per topic however many times a topic is asked for,
// in the manner of client-go's SharedInformerFactory. Informers asked for
// before [InformerFactory.Start] start with it; later ones start at once.
type InformerFactory struct {
	c *Client
	f *watch.Factory
}

// NewInformerFactory returns a factory of shared informers of c's topics.
// defaultResync is the resync period of handlers added with
// [SharedInformer.AddEventHandler]; zero means none.
func NewInformerFactory(c *Client, defaultResync time.Duration) *InformerFactory {
	return &InformerFactory{c: c, f: watch.NewFactory(c.watchEnv(), defaultResync)}
}

// ForTopic returns the factory's shared informer of topic and the
// selection opts name ([Select]), making it the first time: one stream per
// (topic, selection). Errors: not_found for a topic the contract does not
// declare; invalid_argument for a selection the topic does not allow, or
// when the topic and selection were asked for before with another object
// type.
func ForTopic[T any](f *InformerFactory, topic string, opts ...WatchOption) (*SharedInformer[T], error) {
	r, err := f.c.watchRequest(topic, opts)
	if err != nil {
		return nil, err
	}
	return watch.ForTopic[T](f.f, r)
}

// Start starts every informer made so far, and makes later ones start when
// made; they run until ctx ends or [InformerFactory.Shutdown].
func (f *InformerFactory) Start(ctx context.Context) { f.f.Start(ctx) }

// Shutdown stops every informer of the factory and waits until their
// goroutines are gone.
func (f *InformerFactory) Shutdown() { f.f.Shutdown() }

// WaitForCacheSync waits until every informer the factory made so far has
// synced; see [WaitForCacheSync].
func (f *InformerFactory) WaitForCacheSync(ctx context.Context) error {
	return f.f.WaitForCacheSync(ctx)
}

// WaitForCacheSync waits until every informer has synced, as client-go's
// cache.WaitForCacheSync does; it returns the first informer's error (ctx
// ended, or the informer stopped before it synced).
func WaitForCacheSync(ctx context.Context, informers ...CacheSyncer) error {
	return watch.WaitForCacheSync(ctx, informers...)
}

// NewTopicPublisher returns a publisher of a client-written topic of c's
// contract and starts its background loop, which republishes to endpoints
// whose session changes. Stop it with [TopicPublisher.Close]. Errors:
// not_found for a topic the contract does not declare, permission_denied
// for one the server writes.
func NewTopicPublisher[T any](c *Client, topic string) (*TopicPublisher[T], error) {
	decl, ok := c.contract.Topic(topic)
	if !ok {
		return nil, Errorf(CodeNotFound, "contract %s %s declares no topic %s", c.contract.Name(), c.contract.Version(), topic)
	}
	if decl.Writer != handshake.RoleClient {
		return nil, Errorf(CodePermissionDenied, "topic %s is written by %s, not by its clients", topic, c.contract.Server())
	}
	return watch.NewPublisher(c.watchEnv(), watch.PublisherConfig[T]{Topic: topic, Epoch: randomID(8),
		Key: topics.KeyReader[T](decl.Key), Marshal: marshal, CheckKey: checkKey}), nil
}
