package watch

// Informers: a local cache of one topic, its queue of changed keys and
// the handlers it calls.

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// InformerHandlers are called by an [Informer] as its cache changes, one
// at a time, on the informer's goroutine, in the order the changes arrive.
// A slow handler slows only its own informer: the server then sends it the
// latest state of each key that changed meanwhile, not every change. The
// objects passed are the cache's and must not be modified. Any handler may
// be nil.
type InformerHandlers[T any] struct {
	// OnAdd is called for a key the cache did not hold.
	OnAdd func(key string, obj *T)
	// OnUpdate is called for a key whose object was replaced by a newer
	// version.
	OnUpdate func(key string, old, new *T)
	// OnDelete is called for a key that was deleted, or that a fresh
	// snapshot (after a reconnect) no longer holds, with its last object.
	OnDelete func(key string, last *T)
}

// InformerStats counts what an [Informer] did.
type InformerStats struct {
	// Streams is how many watch streams its feed opened, Resumes how many
	// of them resumed from the feed's resume point, sent only the changes
	// since, and Frames how many frames they carried: the informers of one
	// client watching the same topic and selection share one feed, and
	// these counts.
	Streams int64
	Resumes int64
	Frames  int64
	// Syncs is how many snapshots replaced its cache (one per stream that
	// got as far as the synced marker without resuming, and the one it
	// started from); DecodeErrors how many frames it could not decode and
	// skipped.
	Syncs        int64
	DecodeErrors int64
	// Copied is how many objects it took as deep copies of its feed's
	// one decode of a frame, rather than decoding them (see Request.DecodeEach).
	Copied int64
	// Queued is how many changed keys wait for the handlers now, MaxQueued
	// the most that ever waited (at most one per key), Coalesced how many
	// changes were replaced by a later change of their key before the
	// handlers saw them.
	Queued    int
	MaxQueued int
	Coalesced int64
}

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
// bytes into objects of its own, with its own cache, handlers and pace. An
// informer started while the feed is synced starts from the frames the
// feed holds. For one decode per process, share an informer instead ([Factory]).
type Informer[T any] struct {
	env   *Env
	topic string
	// writerAware is set for a server-written topic: while it runs, the
	// client's sessions heartbeat, since their answers say where the
	// topic's writers are.
	writerAware bool
	feed        *feed
	h           InformerHandlers[T]
	// delivering is the header of the write whose change the handlers
	// are being called for; only the processor's goroutine touches it.
	delivering map[string]string
	ctx        context.Context
	cancel     context.CancelFunc
	unhook     func() bool
	done       chan struct{}

	syncedCh chan struct{}
	synced   atomic.Bool

	mu     sync.RWMutex
	cache  map[string]informerEntry[T]
	server string

	// The feed hands what it read to the processor, which decodes it and
	// runs the handlers: a snapshot to replace the cache with, then the
	// latest frame of each changed key (latest; order[head:] is the order
	// keys first changed). A key that changes again before it was
	// processed replaces its frame, so a slow handler makes the informer
	// skip intermediate states, never queue them. The processor takes one
	// key at a time, with the frame that is latest when it gets to it, so
	// a frame superseded while the informer worked through the keys before
	// it is never decoded, and what the handlers see is as fresh as the
	// informer's pace allows.
	qmu       sync.Mutex
	replacing map[string]*feedFrame
	replaceBy string
	order     []string
	head      int
	latest    map[string]*feedFrame
	maxQueued int
	coalesced int64
	wakeCh    chan struct{}

	// copyObject copies a frame's object decoded once for the feed (T's
	// generated DeepCopy), or is nil: then the informer decodes each
	// frame itself (Request.DecodeEach).
	copyObject func(*T) *T

	syncs, decodeErrors, copied atomic.Int64
}

// deepCopier is a type with a generated deep copy (see Request.DecodeEach).
type deepCopier[T any] interface{ DeepCopy() *T }

// informerEntry is a cached object and its version, held by value in the
// cache, so a change costs no allocation beyond its object.
type informerEntry[T any] struct {
	obj *T
	ver frames.ObjectVersion
	// header is the header of the write that made the change (its trace
	// context), when its frame carried one.
	header map[string]string
}

// Start starts an informer of r's topic and selection for the client of
// env, on the client's feed of them, and returns at once; package
// framework's Watch checked the topic and the selection.
func Start[T any](ctx context.Context, env *Env, r Request, h InformerHandlers[T]) *Informer[T] {
	i := newInformer(ctx, env, r, h)
	if i.writerAware {
		env.WriterWatchers.Add(1)
	}
	i.feed = subscribe(env, i, r)
	go i.process()
	return i
}

// newInformer is an informer of r's topic for the client of env, not yet
// on a feed.
func newInformer[T any](ctx context.Context, env *Env, r Request, h InformerHandlers[T]) *Informer[T] {
	i := &Informer[T]{
		env: env, topic: r.Topic, h: h, done: make(chan struct{}), syncedCh: make(chan struct{}),
		writerAware: r.WriterAware,
		cache:       map[string]informerEntry[T]{}, latest: map[string]*feedFrame{},
		wakeCh: make(chan struct{}, 1),
	}
	if _, ok := any(new(T)).(deepCopier[T]); ok && !r.DecodeEach {
		i.copyObject = func(obj *T) *T { return any(obj).(deepCopier[T]).DeepCopy() }
	}
	i.ctx, i.cancel = context.WithCancel(ctx)
	i.unhook = context.AfterFunc(env.Ctx, i.cancel)
	// The processor waits on wakeCh alone (a receive, not a select over
	// two channels, on every burst): the end of ctx wakes it too.
	context.AfterFunc(i.ctx, i.signal)
	return i
}

// DeliveryContext returns, called in a handler, the informer's context
// carrying what the write of the change being reported carried (its trace
// context), through ClientConfig.Propagator: the otel module's
// StartDelivery starts a span linked to that write from it. Without a
// Propagator, for a change whose write carried nothing, and outside a
// handler, it is the informer's context. Handlers run on one goroutine;
// call it only from them.
func (i *Informer[T]) DeliveryContext() context.Context {
	if len(i.delivering) == 0 {
		return i.ctx
	}
	return i.env.Extract(i.ctx, i.delivering)
}

// Stop stops the informer and waits until its goroutines are gone. The
// cache keeps its last contents.
func (i *Informer[T]) Stop() {
	i.cancel()
	<-i.done
	i.unhook()
}

// Done is closed when the informer has stopped.
func (i *Informer[T]) Done() <-chan struct{} { return i.done }

// HasSynced reports whether the cache has received a full snapshot; it
// stays true across reconnects.
func (i *Informer[T]) HasSynced() bool { return i.synced.Load() }

// WaitForSync waits until [Informer.HasSynced] or ctx ends, returning
// ctx's error, or unavailable if the informer stopped first.
func (i *Informer[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-i.syncedCh:
		return nil
	case <-ctx.Done():
		return apierror.NewError(apierror.CodeOf(ctx.Err()), ctx.Err())
	case <-i.done:
		select {
		case <-i.syncedCh:
			return nil
		default:
		}
		return apierror.Errorf(apierror.CodeUnavailable, "informer of %s stopped before it synced", i.topic)
	}
}

// Get returns the cached object at key.
func (i *Informer[T]) Get(key string) (*T, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if e, ok := i.cache[key]; ok {
		return e.obj, true
	}
	return nil, false
}

// Version returns the version of the cached object at key.
func (i *Informer[T]) Version(key string) (frames.ObjectVersion, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if e, ok := i.cache[key]; ok {
		return e.ver, true
	}
	return frames.ObjectVersion{}, false
}

// List returns the cached objects, sorted by key.
func (i *Informer[T]) List() []*T {
	i.mu.RLock()
	defer i.mu.RUnlock()
	keys := slices.Sorted(maps.Keys(i.cache))
	out := make([]*T, len(keys))
	for n, k := range keys {
		out[n] = i.cache[k].obj
	}
	return out
}

// Keys returns the cached keys, sorted.
func (i *Informer[T]) Keys() []string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return slices.Sorted(maps.Keys(i.cache))
}

// Len returns how many keys the cache holds.
func (i *Informer[T]) Len() int {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return len(i.cache)
}

// Server returns the instance of the server whose topic the cache was
// last synced from: a topic lives in the server instance that holds it.
func (i *Informer[T]) Server() string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.server
}

// Stats returns the informer's counters.
func (i *Informer[T]) Stats() InformerStats {
	i.qmu.Lock()
	queued, maxQueued, coalesced := len(i.order)-i.head, i.maxQueued, i.coalesced
	i.qmu.Unlock()
	return InformerStats{
		Streams: i.feed.streams.Load(), Resumes: i.feed.resumes.Load(), Frames: i.feed.frames.Load(),
		Syncs: i.syncs.Load(), DecodeErrors: i.decodeErrors.Load() + i.feed.badFrames.Load(), Copied: i.copied.Load(),
		Queued: queued, MaxQueued: maxQueued, Coalesced: coalesced,
	}
}

// snapshot queues a fresh state to replace the cache: the latest set
// frame of each key, read from instance. Changes still queued are dropped:
// the snapshot supersedes them. See [subscriber].
func (i *Informer[T]) snapshot(raw map[string]*feedFrame, instance string) {
	i.qmu.Lock()
	defer i.qmu.Unlock()
	i.replacing, i.replaceBy = raw, instance
	clear(i.order)
	i.order, i.head = i.order[:0], 0
	clear(i.latest)
	i.signal()
}

// change queues fr (shared) as the latest change of key, for the feed's
// next wake. It reports false when the queue is full; see
// [subscriber].
func (i *Informer[T]) change(key string, fr *feedFrame) bool {
	i.qmu.Lock()
	defer i.qmu.Unlock()
	if _, ok := i.latest[key]; ok {
		i.coalesced++
	} else {
		queued := len(i.order) - i.head
		if queued >= i.env.MaxQueued {
			return false
		}
		if i.head > 0 && i.head >= queued {
			// Taken keys are most of the slice: move the rest down rather
			// than grow it.
			n := copy(i.order, i.order[i.head:])
			clear(i.order[n:])
			i.order, i.head = i.order[:n], 0
		}
		i.order = append(i.order, key)
		i.maxQueued = max(i.maxQueued, queued+1)
	}
	i.latest[key] = fr
	return true
}

// wake makes the processor take what the feed queued.
func (i *Informer[T]) wake() { i.signal() }

func (i *Informer[T]) signal() {
	select {
	case i.wakeCh <- struct{}{}:
	default:
	}
}

// process runs the handlers: it applies what the feed queued, a snapshot
// first, then the latest change of each key, one key at a time, until the
// informer stops; then it leaves the feed.
func (i *Informer[T]) process() {
	defer func() {
		i.feed.unsubscribe(i)
		if i.writerAware {
			i.env.WriterWatchers.Add(-1)
		}
		close(i.done)
	}()
	for {
		if i.ctx.Err() != nil {
			return
		}
		i.qmu.Lock()
		if raw := i.replacing; raw != nil {
			by := i.replaceBy
			i.replacing = nil
			i.qmu.Unlock()
			snapshot := make(map[string]informerEntry[T], len(raw))
			for key, fr := range raw {
				if f, ok := i.decode(key, fr); ok && f.Type == protocol.FrameSet {
					snapshot[key] = informerEntry[T]{obj: f.Object, ver: frames.ObjectVersion{Epoch: f.Epoch, Seq: f.Seq}, header: f.Header}
				}
			}
			i.replace(snapshot, by)
			continue
		}
		if i.head == len(i.order) {
			i.order, i.head = i.order[:0], 0
			i.qmu.Unlock()
			<-i.wakeCh
			continue
		}
		key := i.order[i.head]
		i.order[i.head] = ""
		i.head++
		fr := i.latest[key]
		delete(i.latest, key)
		i.qmu.Unlock()
		f, ok := i.decode(key, fr)
		if !ok {
			continue
		}
		switch f.Type {
		case protocol.FrameSet:
			i.apply(f.Key, informerEntry[T]{obj: f.Object, ver: frames.ObjectVersion{Epoch: f.Epoch, Seq: f.Seq}, header: f.Header})
		case protocol.FrameDelete:
			i.delivering = f.Header
			i.remove(f.Key)
		}
		i.delivering = nil
	}
}

// decode decodes a set or delete frame of key into the informer's own
// objects: a copy of the frame decoded once for the feed, or, without
// copyObject, a decode of its own. A frame that does not decode is
// counted, logged and skipped.
func (i *Informer[T]) decode(key string, fr *feedFrame) (frames.Frame[T], bool) {
	f, err := i.frameOf(fr)
	if err != nil || (f.Type == protocol.FrameSet && f.Object == nil) {
		i.decodeErrors.Add(1)
		i.env.Logger.Warn("lockstep: watch frame does not decode", "topic", i.topic, "key", key, "err", err)
		return f, false
	}
	return f, true
}

// frameOf is fr decoded into objects of the informer's own.
func (i *Informer[T]) frameOf(fr *feedFrame) (frames.Frame[T], error) {
	if i.copyObject != nil {
		if d, own, ok := decodeOnce[T](fr); ok {
			f := d.f
			if f.Object != nil && !own {
				f.Object = i.copyObject(f.Object)
				i.copied.Add(1)
			}
			return f, d.err
		}
	}
	var f frames.Frame[T]
	err := frames.Decode(fr.line, &f)
	return f, err
}

// apply stores a changed object and reports it.
func (i *Informer[T]) apply(key string, n informerEntry[T]) {
	i.mu.Lock()
	old, had := i.cache[key]
	i.cache[key] = n
	i.mu.Unlock()
	i.delivering = n.header
	switch {
	case !had:
		if i.h.OnAdd != nil {
			i.h.OnAdd(key, n.obj)
		}
	case old.ver != n.ver:
		if i.h.OnUpdate != nil {
			i.h.OnUpdate(key, old.obj, n.obj)
		}
	}
}

// remove deletes a key and reports it.
func (i *Informer[T]) remove(key string) {
	i.mu.Lock()
	old, had := i.cache[key]
	delete(i.cache, key)
	i.mu.Unlock()
	if had && i.h.OnDelete != nil {
		i.h.OnDelete(key, old.obj)
	}
}

// replace makes a fresh snapshot the cache, reporting the difference:
// keys it adds, keys whose version changed, keys it no longer holds. An
// object whose version did not change keeps its cached value.
func (i *Informer[T]) replace(snapshot map[string]informerEntry[T], instance string) {
	// A change's old is nil for a key the cache did not hold, its new nil
	// for a key the snapshot lacks: cached objects are never nil.
	type change struct {
		key      string
		old, new *T
		header   map[string]string
	}
	var changes []change
	i.mu.Lock()
	for k, n := range snapshot {
		o, had := i.cache[k]
		switch {
		case !had:
			changes = append(changes, change{k, nil, n.obj, n.header})
		case o.ver != n.ver:
			changes = append(changes, change{k, o.obj, n.obj, n.header})
		default:
			snapshot[k] = o
		}
	}
	for k, o := range i.cache {
		if _, ok := snapshot[k]; !ok {
			changes = append(changes, change{k, o.obj, nil, nil})
		}
	}
	i.cache, i.server = snapshot, instance
	i.mu.Unlock()
	sort.Slice(changes, func(a, b int) bool { return changes[a].key < changes[b].key })
	for _, ch := range changes {
		i.delivering = ch.header
		switch {
		case ch.old == nil:
			if i.h.OnAdd != nil {
				i.h.OnAdd(ch.key, ch.new)
			}
		case ch.new == nil:
			if i.h.OnDelete != nil {
				i.h.OnDelete(ch.key, ch.old)
			}
		default:
			if i.h.OnUpdate != nil {
				i.h.OnUpdate(ch.key, ch.old, ch.new)
			}
		}
	}
	i.delivering = nil
	i.syncs.Add(1)
	if !i.synced.Swap(true) {
		close(i.syncedCh)
	}
}
