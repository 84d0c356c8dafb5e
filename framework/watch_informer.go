package framework

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
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
	// Streams is how many watch streams it opened, Syncs how many
	// snapshots it received (one per stream that got as far as the synced
	// marker without resuming), Resumes how many streams resumed from its
	// resume point instead, sent only the changes since.
	Streams int64
	Syncs   int64
	Resumes int64
	// Frames is how many frames it read; DecodeErrors how many of them it
	// could not decode and skipped.
	Frames       int64
	DecodeErrors int64
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
// [Informer.List], [Informer.HasSynced] and add/update/delete handlers. It
// opens its stream through the client's version-aware routing, waiting
// while no endpoint holds a session at the client's own contract version,
// and opens a new one whenever a stream ends: the endpoint drained or
// restarted, its session was lost, the connection broke or fell silent.
// A new stream resumes from the revision the informer last saw, when the
// same server process still remembers every change since (then only those
// changes are sent); otherwise it starts with a full snapshot, which
// replaces the cache, and keys it lacks are reported deleted. There is no
// "too old" error.
type Informer[T any] struct {
	c     *Client
	topic string
	// query is the watch request's selection (?nodeName=node-042), ""
	// for none: see [Select].
	query string
	// writerAware is set for a server-written topic: the informer watches
	// a replica whose writer is attached and syncs from no other.
	writerAware bool
	h           InformerHandlers[T]
	ctx         context.Context
	cancel      context.CancelFunc
	unhook      func() bool
	done        chan struct{}

	syncedCh chan struct{}
	synced   atomic.Bool

	mu     sync.RWMutex
	cache  map[string]*informerEntry[T]
	server string

	// The stream's reader hands what it read to the processor, which
	// decodes it and runs the handlers: a snapshot to replace the cache
	// with, then the latest frame of each changed key (latest; order is the
	// order keys first changed). A key that changes again before it was
	// processed replaces its frame, so a slow handler makes the informer
	// skip intermediate states, never queue them. qgen names the stream
	// whose changes are queued; frames of an earlier stream are dropped.
	qmu       sync.Mutex
	qgen      uint64
	replacing map[string]*informerEntry[T]
	replaceBy string
	order     []string
	latest    map[string][]byte
	maxQueued int
	coalesced int64
	wake      chan struct{}
	processed chan struct{}

	// resume is where the next stream asks to start: the synced frame's
	// history and revision, then the revision of every change read after
	// it. Only the run goroutine uses it.
	resume resumePoint

	rr                                            atomic.Uint64
	streams, syncs, resumes, frames, decodeErrors atomic.Int64
}

// maxInformerQueue bounds the changed keys an informer holds unprocessed;
// beyond it (a writer churning through more distinct keys than a topic
// may hold while a handler is stuck) it resyncs from a new stream.
const maxInformerQueue = 2 * DefaultTopicMaxKeys

type informerEntry[T any] struct {
	obj *T
	ver ObjectVersion
}

// Watch starts an informer of a topic of c's contract and returns at
// once; use [Informer.WaitForSync] to wait for its first snapshot. It runs
// until ctx ends, [Informer.Stop] is called, or the client is closed. With
// [Select] options it holds only the objects of its selection. Errors:
// not_found for a topic the contract does not declare; invalid_argument for
// a selection the topic's selectors do not allow.
func Watch[T any](ctx context.Context, c *Client, topic string, h InformerHandlers[T], opts ...WatchOption) (*Informer[T], error) {
	decl, ok := c.contract.Topic(topic)
	if !ok {
		return nil, Errorf(CodeNotFound, "contract %s %s declares no topic %s", c.contract.Name(), c.contract.Version(), topic)
	}
	sel, err := newWatchConfig(opts).checkedSelection(topic, decl.Selectors)
	if err != nil {
		return nil, err
	}
	i := &Informer[T]{
		c: c, topic: topic, query: sel.key(decl.Selectors), h: h, done: make(chan struct{}), syncedCh: make(chan struct{}),
		writerAware: decl.Writer == handshake.RoleServer,
		cache:       map[string]*informerEntry[T]{}, latest: map[string][]byte{},
		wake: make(chan struct{}, 1), processed: make(chan struct{}),
	}
	i.ctx, i.cancel = context.WithCancel(ctx)
	i.unhook = context.AfterFunc(c.ctx, i.cancel)
	if i.writerAware {
		c.writerWatchers.Add(1)
	}
	go i.process()
	go i.run()
	return i, nil
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
		return NewError(CodeOf(ctx.Err()), ctx.Err())
	case <-i.done:
		select {
		case <-i.syncedCh:
			return nil
		default:
		}
		return Errorf(CodeUnavailable, "informer of %s stopped before it synced", i.topic)
	}
}

// Get returns the cached object at key.
func (i *Informer[T]) Get(key string) (*T, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if e := i.cache[key]; e != nil {
		return e.obj, true
	}
	return nil, false
}

// Version returns the version of the cached object at key.
func (i *Informer[T]) Version(key string) (ObjectVersion, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if e := i.cache[key]; e != nil {
		return e.ver, true
	}
	return ObjectVersion{}, false
}

// List returns the cached objects, sorted by key.
func (i *Informer[T]) List() []*T {
	i.mu.RLock()
	defer i.mu.RUnlock()
	keys := sortedKeys(i.cache)
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
	return sortedKeys(i.cache)
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
	queued, maxQueued, coalesced := len(i.order), i.maxQueued, i.coalesced
	i.qmu.Unlock()
	return InformerStats{
		Streams: i.streams.Load(), Syncs: i.syncs.Load(), Resumes: i.resumes.Load(),
		Frames: i.frames.Load(), DecodeErrors: i.decodeErrors.Load(),
		Queued: queued, MaxQueued: maxQueued, Coalesced: coalesced,
	}
}

// run opens stream after stream until the informer stops. A stream that
// failed before its snapshot is retried after the client's backoff.
func (i *Informer[T]) run() {
	defer func() {
		<-i.processed
		if i.writerAware {
			i.c.writerWatchers.Add(-1)
		}
		close(i.done)
	}()
	failures := 0
	for {
		e, sess, ok := i.route()
		if !ok {
			return
		}
		synced, err := i.stream(e, sess, failures == 0)
		if i.ctx.Err() != nil {
			return
		}
		if synced {
			failures = 0
			continue
		}
		if err != nil {
			i.c.cfg.Logger.Debug("lockstep: watch stream failed", "topic", i.topic, "url", e.url, "err", err)
		}
		t := i.c.cfg.Clock.NewTimer(i.c.cfg.Backoff.Delay(failures))
		failures++
		select {
		case <-t.Chan():
		case <-i.ctx.Done():
			t.Stop()
			return
		}
	}
}

// route waits for an endpoint whose session can carry the topic, as long
// as the informer lives, taking the endpoints in turn. For a server-written
// topic it picks among the replicas whose writer is attached, then among
// those it knows nothing of yet, and waits while every replica it can
// reach says its topic has no writer.
func (i *Informer[T]) route() (*endpoint, *clientSession, bool) {
	w := &routeWait{c: i.c}
	defer w.done()
	var e *endpoint
	var sess *clientSession
	err := w.until(i.ctx, func() bool {
		eps := i.c.topicEndpoints()
		if i.writerAware {
			live, unknown, _ := i.c.writerEndpoints(i.topic)
			eps = live
			if len(eps) == 0 {
				eps = unknown
			}
		}
		if len(eps) == 0 {
			return false
		}
		e = eps[int(i.rr.Add(1)%uint64(len(eps)))]
		sess = e.routableSession()
		return sess != nil && i.c.topicSession(sess)
	})
	return e, sess, err == nil
}

// stream reads one watch stream to its end. It reports whether the stream
// got as far as its snapshot. A refusal is logged as a warning when warn is
// set, on the first of a run of failed attempts.
func (i *Informer[T]) stream(e *endpoint, sess *clientSession, warn bool) (bool, error) {
	c := i.c
	ctx, cancel := context.WithCancel(i.ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	i.streams.Add(1)
	url := e.url + protocol.WatchPath(c.contract.Name(), c.contract.Version(), i.topic)
	sep := "?"
	if i.query != "" {
		url += sep + i.query
		sep = "&"
	}
	if i.resume.history != "" {
		url += sep + protocol.QuerySince + "=" + i.resume.String()
	}
	a := e.send(ctx, sess, request{method: http.MethodGet, url: url, stream: true})
	if a.stream == nil {
		d, err := e.settle(ctx, sess, a, idempotentCall, "watch of "+i.topic)
		if d.action == actFail && d.lose == "" && warn && a.transport == transportOK {
			c.cfg.Logger.Warn("lockstep: watch refused", "topic", i.topic, "url", e.url, "err", err)
		}
		return false, err
	}
	defer a.stream.Close()
	// End the stream when its session leaves routing: the endpoint was
	// lost, is draining, or handshook again; or, for a server-written
	// topic, when its writer is gone while another replica's is attached.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			changed := c.changedCh()
			if e.routableSession() != sess || i.writerMoved(sess) {
				cancel()
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	// A live stream carries a frame at least every half TTL (pings when
	// the topic is quiet); silence for two TTLs means a dead connection.
	idle := 2 * sess.ttl
	if idle <= 0 {
		idle = 10 * time.Second
	}
	silence := c.cfg.Clock.AfterFunc(idle, cancel)
	defer silence.Stop()

	return i.readFrames(ctx, cancel, e, sess, a.stream, a.resumed, func() { silence.Reset(idle) })
}

// readFrames reads one stream's frames to its end: the snapshot into the
// cache once its synced marker comes, then each change into the queue the
// processor drains; a resumed stream (resumed) continues the last one.
// alive is called on each frame (the stream is not
// silent); cancel ends the stream when the queue overflows.
func (i *Informer[T]) readFrames(ctx context.Context, cancel context.CancelFunc, e *endpoint, sess *clientSession, body io.Reader, resumed bool, alive func()) (bool, error) {
	c := i.c
	br := bufio.NewReaderSize(body, 4<<10)
	var scratch []byte
	// A resumed stream continues the last one: its frames before synced
	// are changes like those after it, queued over what is queued. Any
	// other starts with a snapshot, collected aside.
	var snapshot map[string]*informerEntry[T]
	gen := i.queueGen()
	if !resumed {
		snapshot = map[string]*informerEntry[T]{}
	}
	synced := false
	for {
		line, err := readFrameLine(br, &scratch, c.cfg.MaxResponseBytes)
		if err != nil {
			if ctx.Err() != nil && i.ctx.Err() == nil {
				err = Errorf(CodeUnavailable, "watch stream of %s at %s ended: session lost, stream silent or informer overflowing", i.topic, e.url)
			}
			return synced, err
		}
		alive()
		i.frames.Add(1)
		if synced || resumed {
			// Past the snapshot, changes are only read here, promptly,
			// so the connection never holds stale frames; the processor
			// decodes the latest of each key.
			typ, key, rev, ok := frameTypeKey(line)
			if !ok {
				i.decodeErrors.Add(1)
				continue
			}
			if typ == protocol.FrameSet || typ == protocol.FrameDelete {
				if !i.enqueue(gen, key, line) {
					// A change not queued: the next stream must not
					// resume past it.
					i.resume = resumePoint{}
					cancel()
				} else if synced && rev > i.resume.rev {
					i.resume.rev = rev
				}
				continue
			}
		}
		var f watchFrame[T]
		if err := decodeFrame(line, &f); err != nil || (f.Type == protocol.FrameSet && f.Object == nil) {
			i.decodeErrors.Add(1)
			c.cfg.Logger.Warn("lockstep: watch frame does not decode", "topic", i.topic, "key", f.Key, "err", err)
			continue
		}
		switch f.Type {
		case protocol.FrameSet:
			snapshot[f.Key] = &informerEntry[T]{obj: f.Object, ver: ObjectVersion{Epoch: f.Epoch, Seq: f.Seq}}
		case protocol.FrameDelete:
			delete(snapshot, f.Key)
		case protocol.FrameSynced:
			live := f.Writer == nil || *f.Writer // a server without writer reports has one
			c.learnTopicWriter(sess, i.topic, live)
			if !live && i.writerAware && !resumed {
				// A replica whose topic has no writer holds no topic, or a
				// stale one: never the cache's truth. Wait for a replica
				// whose writer is attached.
				return false, Errorf(CodeUnavailable, "%s at %s has no writer attached", i.topic, e.url)
			}
			if resumed {
				i.resumes.Add(1)
			} else {
				gen = i.enqueueSnapshot(snapshot, f.Instance)
				snapshot = nil
			}
			i.resume = resumePoint{history: f.History, rev: f.Rev}
			synced = true
		case protocol.FrameClosing:
			closedBy(e, sess, f.Reason)
			return synced, nil
		}
		// ping and frame types this version does not know carry nothing
		// for the cache.
	}
}

// closedBy takes sess out of routing as a closing frame's reason says: the
// server drains, or it lost the session.
func closedBy(e *endpoint, sess *clientSession, reason string) {
	switch reason {
	case protocol.CloseDraining:
		e.lose(sess, stateDraining, Errorf(CodeUnavailable, "%s is draining", sess.peer.Component))
	case protocol.CloseSessionLost:
		e.lose(sess, stateConnecting, Errorf(CodeHandshakeRequired, "the server lost the session"))
	}
}

// writerMoved reports whether the topic's writer at sess is gone while
// another replica's is attached: the informer should move there.
func (i *Informer[T]) writerMoved(sess *clientSession) bool {
	if !i.writerAware {
		return false
	}
	if live, known := sess.writers.get(i.topic); !known || live {
		return false
	}
	live, _, _ := i.c.writerEndpoints(i.topic)
	return len(live) > 0
}

// queueGen returns the generation of the stream whose changes are queued.
func (i *Informer[T]) queueGen() uint64 {
	i.qmu.Lock()
	defer i.qmu.Unlock()
	return i.qgen
}

// enqueueSnapshot queues a stream's snapshot to replace the cache. Changes
// still queued from earlier streams are dropped: the snapshot supersedes
// them. It returns the stream's generation, for [Informer.enqueue].
func (i *Informer[T]) enqueueSnapshot(snapshot map[string]*informerEntry[T], instance string) uint64 {
	i.qmu.Lock()
	defer i.qmu.Unlock()
	i.qgen++
	i.replacing, i.replaceBy = snapshot, instance
	clear(i.order)
	i.order = i.order[:0]
	clear(i.latest)
	i.signal()
	return i.qgen
}

// enqueue queues a copy of line as the latest change of key. It reports
// false when the queue is full and the stream must end.
func (i *Informer[T]) enqueue(gen uint64, key string, line []byte) bool {
	i.qmu.Lock()
	defer i.qmu.Unlock()
	if gen != i.qgen {
		return true
	}
	if _, ok := i.latest[key]; ok {
		i.coalesced++
	} else {
		if len(i.order) >= maxInformerQueue {
			return false
		}
		i.order = append(i.order, key)
		i.maxQueued = max(i.maxQueued, len(i.order))
	}
	i.latest[key] = append([]byte(nil), line...)
	i.signal()
	return true
}

func (i *Informer[T]) signal() {
	select {
	case i.wake <- struct{}{}:
	default:
	}
}

// process runs the handlers: it applies what the stream's reader queued,
// a snapshot first, then the latest change of each key, until the
// informer stops.
func (i *Informer[T]) process() {
	defer close(i.processed)
	var order []string
	var latest map[string][]byte
	for {
		i.qmu.Lock()
		if rep := i.replacing; rep != nil {
			by := i.replaceBy
			i.replacing = nil
			i.qmu.Unlock()
			i.replace(rep, by)
			continue
		}
		if len(i.order) == 0 {
			i.qmu.Unlock()
			select {
			case <-i.wake:
				continue
			case <-i.ctx.Done():
				return
			}
		}
		order, i.order = i.order, order[:0]
		if latest == nil {
			latest = map[string][]byte{}
		}
		latest, i.latest = i.latest, latest
		i.qmu.Unlock()
		for _, key := range order {
			if i.ctx.Err() != nil {
				return
			}
			var f watchFrame[T]
			if err := decodeFrame(latest[key], &f); err != nil || (f.Type == protocol.FrameSet && f.Object == nil) {
				i.decodeErrors.Add(1)
				i.c.cfg.Logger.Warn("lockstep: watch frame does not decode", "topic", i.topic, "key", key, "err", err)
				continue
			}
			switch f.Type {
			case protocol.FrameSet:
				i.apply(f.Key, &informerEntry[T]{obj: f.Object, ver: ObjectVersion{Epoch: f.Epoch, Seq: f.Seq}})
			case protocol.FrameDelete:
				i.remove(f.Key)
			}
		}
		clear(order)
		clear(latest)
	}
}

// apply stores a changed object and reports it.
func (i *Informer[T]) apply(key string, n *informerEntry[T]) {
	i.mu.Lock()
	old := i.cache[key]
	i.cache[key] = n
	i.mu.Unlock()
	switch {
	case old == nil:
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
	old := i.cache[key]
	delete(i.cache, key)
	i.mu.Unlock()
	if old != nil && i.h.OnDelete != nil {
		i.h.OnDelete(key, old.obj)
	}
}

// replace makes a fresh snapshot the cache, reporting the difference:
// keys it adds, keys whose version changed, keys it no longer holds. An
// object whose version did not change keeps its cached value.
func (i *Informer[T]) replace(snapshot map[string]*informerEntry[T], instance string) {
	type change struct {
		key      string
		old, new *informerEntry[T]
	}
	var changes []change
	i.mu.Lock()
	for k, n := range snapshot {
		o := i.cache[k]
		switch {
		case o == nil || o.ver != n.ver:
			changes = append(changes, change{k, o, n})
		default:
			snapshot[k] = o
		}
	}
	for k, o := range i.cache {
		if _, ok := snapshot[k]; !ok {
			changes = append(changes, change{k, o, nil})
		}
	}
	i.cache, i.server = snapshot, instance
	i.mu.Unlock()
	sort.Slice(changes, func(a, b int) bool { return changes[a].key < changes[b].key })
	for _, ch := range changes {
		switch {
		case ch.old == nil:
			if i.h.OnAdd != nil {
				i.h.OnAdd(ch.key, ch.new.obj)
			}
		case ch.new == nil:
			if i.h.OnDelete != nil {
				i.h.OnDelete(ch.key, ch.old.obj)
			}
		default:
			if i.h.OnUpdate != nil {
				i.h.OnUpdate(ch.key, ch.old.obj, ch.new.obj)
			}
		}
	}
	i.syncs.Add(1)
	if !i.synced.Swap(true) {
		close(i.syncedCh)
	}
}
