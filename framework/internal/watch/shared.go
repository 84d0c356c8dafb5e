package watch

// Shared informers: one informer of a topic and selection shared by the
// handlers, indexes and listers of one process, and the factory that
// makes them.

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// IndexFunc files an object under zero or more values of one index, as
// client-go's cache.IndexFunc does: ByIndex(name, v) then returns every
// object whose IndexFunc returned v.
type IndexFunc[T any] func(key string, obj *T) []string

// Indexers names index functions.
type Indexers[T any] map[string]IndexFunc[T]

// SharedInformer is one watch stream of a topic shared by several handlers
// and listers of one process, made by an [Factory]: the topic is
// sent and decoded once however many parts of the process read it. It
// keeps the objects with their indexes ([SharedInformer.AddIndexers]),
// read through a [Lister], and it re-delivers every object to handlers
// that ask for a resync period.
//
// Handlers run one at a time, in the order changes arrive; a handler must
// not register handlers or indexers of the same informer.
type SharedInformer[T any] struct {
	f *Factory
	// req is its watch's topic and selection.
	req Request

	// dispatch serialises handler calls: changes from the stream, resyncs
	// and the replay a late handler is given. Lock order: dispatch, then
	// mu.
	dispatch sync.Mutex
	handlers []*handlerRegistration[T]

	mu       sync.RWMutex
	items    map[string]*T
	indexers Indexers[T]
	indices  map[string]map[string]map[string]struct{} // index → value → keys
	inf      *Informer[T]
	started  chan struct{} // closed once inf is set
}

// handlerRegistration is one handler of a shared informer.
type handlerRegistration[T any] struct {
	h      InformerHandlers[T]
	resync time.Duration
	stop   chan struct{}
}

// HandlerRegistration is what [SharedInformer.AddEventHandler] returns:
// pass it to [SharedInformer.RemoveEventHandler].
type HandlerRegistration interface{ handlerRegistration() }

func (*handlerRegistration[T]) handlerRegistration() {}

// Lister reads a shared informer's objects, by key or by index.
type Lister[T any] struct{ s *SharedInformer[T] }

// Factory makes shared informers for the topics of one client's
// contract, one stream per topic however many times a topic is asked for,
// in the manner of client-go's SharedInformerFactory. Informers asked for
// before [Factory.Start] start with it; later ones start at once.
type Factory struct {
	env    *Env
	resync time.Duration

	mu sync.Mutex
	// informers by topic and selection: "<topic>?<selection query>".
	informers map[string]sharedInformer
	ctx       context.Context // set by Start
	wg        sync.WaitGroup
	shutdown  bool
}

// sharedInformer is what a factory needs of a SharedInformer of any type.
type sharedInformer interface {
	start(ctx context.Context)
	stop()
	objectType() reflect.Type
}

// NewFactory returns a factory of shared informers of the topics of env's
// client. defaultResync is the resync period of handlers added with
// [SharedInformer.AddEventHandler]; zero means none.
func NewFactory(env *Env, defaultResync time.Duration) *Factory {
	return &Factory{env: env, resync: defaultResync, informers: map[string]sharedInformer{}}
}

// ForTopic returns the factory's shared informer of r's topic and
// selection, making it the first time: one stream per (topic, selection).
// Package framework's ForTopic checked the topic and the selection.
// Errors: invalid_argument when the topic and selection were asked for
// before with another object type.
func ForTopic[T any](f *Factory, r Request) (*SharedInformer[T], error) {
	id := r.Topic
	if r.Query != "" {
		id += "?" + r.Query
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if si, ok := f.informers[id]; ok {
		s, ok := si.(*SharedInformer[T])
		if !ok {
			return nil, apierror.Errorf(apierror.CodeInvalidArgument, "topic %s is already informed as %v, not %v", id, si.objectType(), reflect.TypeFor[T]())
		}
		return s, nil
	}
	s := &SharedInformer[T]{f: f, req: r, items: map[string]*T{},
		indexers: Indexers[T]{}, indices: map[string]map[string]map[string]struct{}{},
		started: make(chan struct{})}
	f.informers[id] = s
	if f.ctx != nil && !f.shutdown {
		s.start(f.ctx)
	}
	return s, nil
}

// Start starts every informer made so far, and makes later ones start when
// made; they run until ctx ends or [Factory.Shutdown].
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx != nil || f.shutdown {
		return
	}
	f.ctx = ctx
	for _, s := range f.informers {
		s.start(ctx)
	}
}

// Shutdown stops every informer of the factory and waits until their
// goroutines are gone.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.shutdown = true
	informers := make([]sharedInformer, 0, len(f.informers))
	for _, s := range f.informers {
		informers = append(informers, s)
	}
	f.mu.Unlock()
	for _, s := range informers {
		s.stop()
	}
	f.wg.Wait()
}

// WaitForCacheSync waits until every informer the factory made so far has
// synced; see [WaitForCacheSync].
func (f *Factory) WaitForCacheSync(ctx context.Context) error {
	f.mu.Lock()
	syncers := make([]CacheSyncer, 0, len(f.informers))
	for _, s := range f.informers {
		syncers = append(syncers, s.(CacheSyncer))
	}
	f.mu.Unlock()
	return WaitForCacheSync(ctx, syncers...)
}

// CacheSyncer is an informer that can be waited for: [Informer] and
// [SharedInformer].
type CacheSyncer interface {
	WaitForSync(ctx context.Context) error
}

// WaitForCacheSync waits until every informer has synced, as client-go's
// cache.WaitForCacheSync does; it returns the first informer's error (ctx
// ended, or the informer stopped before it synced).
func WaitForCacheSync(ctx context.Context, informers ...CacheSyncer) error {
	for _, inf := range informers {
		if err := inf.WaitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *SharedInformer[T]) objectType() reflect.Type { return reflect.TypeFor[T]() }

// start opens the informer's stream and the resync loops of the handlers
// registered so far.
func (s *SharedInformer[T]) start(ctx context.Context) {
	inf := Start(ctx, s.f.env, s.req, InformerHandlers[T]{OnAdd: s.onAdd, OnUpdate: s.onUpdate, OnDelete: s.onDelete})
	s.mu.Lock()
	s.inf = inf
	s.mu.Unlock()
	close(s.started)
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	for _, r := range s.handlers {
		s.startResyncLocked(r)
	}
}

func (s *SharedInformer[T]) stop() {
	s.dispatch.Lock()
	for _, r := range s.handlers {
		r.close()
	}
	s.dispatch.Unlock()
	if inf := s.informer(); inf != nil {
		inf.Stop()
	}
}

func (s *SharedInformer[T]) informer() *Informer[T] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inf
}

// HasSynced reports whether the informer holds a full snapshot and every
// handler was told of it; it stays true across reconnects.
func (s *SharedInformer[T]) HasSynced() bool {
	inf := s.informer()
	return inf != nil && inf.HasSynced()
}

// WaitForSync waits until [SharedInformer.HasSynced] or ctx ends; an
// informer whose factory was not started yet is waited for too.
func (s *SharedInformer[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-s.started:
		return s.informer().WaitForSync(ctx)
	case <-ctx.Done():
		return apierror.NewError(apierror.CodeOf(ctx.Err()), ctx.Err())
	}
}

// Informer returns the informer under the shared one (nil before the
// factory starts it), for its stats and the server it is synced to.
func (s *SharedInformer[T]) Informer() *Informer[T] { return s.informer() }

// Lister returns a reader of the informer's objects.
func (s *SharedInformer[T]) Lister() *Lister[T] { return &Lister[T]{s} }

// AddEventHandler registers handlers, with the factory's default resync
// period. A handler added after the informer synced is first told of every
// object it holds, as OnAdd.
func (s *SharedInformer[T]) AddEventHandler(h InformerHandlers[T]) HandlerRegistration {
	return s.AddEventHandlerWithResyncPeriod(h, s.f.resync)
}

// AddEventHandlerWithResyncPeriod registers handlers that are also handed
// every object again, as OnUpdate with the same object as old and new,
// every resync period (zero: never), the way client-go's resync lets a
// controller re-check what nothing changed. A resync re-delivers the
// local cache; it sends nothing over the network.
func (s *SharedInformer[T]) AddEventHandlerWithResyncPeriod(h InformerHandlers[T], resync time.Duration) HandlerRegistration {
	r := &handlerRegistration[T]{h: h, resync: resync, stop: make(chan struct{})}
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	s.handlers = append(s.handlers, r)
	if h.OnAdd != nil {
		for _, key := range s.sortedKeys() {
			if obj, ok := s.get(key); ok {
				h.OnAdd(key, obj)
			}
		}
	}
	if s.informer() != nil {
		s.startResyncLocked(r)
	}
	return r
}

// RemoveEventHandler stops calling the handlers of reg.
func (s *SharedInformer[T]) RemoveEventHandler(reg HandlerRegistration) {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	for n, r := range s.handlers {
		if r == reg {
			r.close()
			s.handlers = append(s.handlers[:n:n], s.handlers[n+1:]...)
			return
		}
	}
}

func (r *handlerRegistration[T]) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
}

// startResyncLocked starts r's resync loop, if it has a period.
func (s *SharedInformer[T]) startResyncLocked(r *handlerRegistration[T]) {
	if r.resync <= 0 || r.h.OnUpdate == nil {
		return
	}
	clock := s.f.env.Clock
	s.f.wg.Add(1)
	go func() {
		defer s.f.wg.Done()
		tick := clock.NewTicker(r.resync)
		defer tick.Stop()
		inf := s.informer()
		for {
			select {
			case <-tick.Chan():
			case <-r.stop:
				return
			case <-inf.Done():
				return
			}
			if inf.HasSynced() {
				s.resync(r)
			}
		}
	}()
}

// resync hands every object to r's OnUpdate, between two changes.
func (s *SharedInformer[T]) resync(r *handlerRegistration[T]) {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	select {
	case <-r.stop:
		return // removed meanwhile
	default:
	}
	for _, key := range s.sortedKeys() {
		if obj, ok := s.get(key); ok {
			r.h.OnUpdate(key, obj, obj)
		}
	}
}

// AddIndexers adds indexes, filing every object already held under each.
// Errors: invalid_argument for a name already in use.
func (s *SharedInformer[T]) AddIndexers(ix Indexers[T]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range ix {
		if _, dup := s.indexers[name]; dup {
			return apierror.Errorf(apierror.CodeInvalidArgument, "informer of %s already has an index %q", s.req.Topic, name)
		}
	}
	for name, fn := range ix {
		s.indexers[name] = fn
		s.indices[name] = map[string]map[string]struct{}{}
		for key, obj := range s.items {
			s.fileLocked(name, fn, key, obj)
		}
	}
	return nil
}

func (s *SharedInformer[T]) fileLocked(name string, fn IndexFunc[T], key string, obj *T) {
	idx := s.indices[name]
	for _, v := range fn(key, obj) {
		keys := idx[v]
		if keys == nil {
			keys = map[string]struct{}{}
			idx[v] = keys
		}
		keys[key] = struct{}{}
	}
}

func (s *SharedInformer[T]) unfileLocked(key string, obj *T) {
	for name, fn := range s.indexers {
		idx := s.indices[name]
		for _, v := range fn(key, obj) {
			if keys := idx[v]; keys != nil {
				delete(keys, key)
				if len(keys) == 0 {
					delete(idx, v)
				}
			}
		}
	}
}

// store puts obj at key (nil: removes the key), keeping the indexes.
func (s *SharedInformer[T]) store(key string, obj *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.items[key]; ok {
		s.unfileLocked(key, old)
	}
	if obj == nil {
		delete(s.items, key)
		return
	}
	s.items[key] = obj
	for name, fn := range s.indexers {
		s.fileLocked(name, fn, key, obj)
	}
}

func (s *SharedInformer[T]) onAdd(key string, obj *T) {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	s.store(key, obj)
	for _, r := range s.handlers {
		if r.h.OnAdd != nil {
			r.h.OnAdd(key, obj)
		}
	}
}

func (s *SharedInformer[T]) onUpdate(key string, old, obj *T) {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	s.store(key, obj)
	for _, r := range s.handlers {
		if r.h.OnUpdate != nil {
			r.h.OnUpdate(key, old, obj)
		}
	}
}

func (s *SharedInformer[T]) onDelete(key string, last *T) {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	s.store(key, nil)
	for _, r := range s.handlers {
		if r.h.OnDelete != nil {
			r.h.OnDelete(key, last)
		}
	}
}

func (s *SharedInformer[T]) get(key string) (*T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.items[key]
	return obj, ok
}

func (s *SharedInformer[T]) sortedKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sortedKeys(s.items)
}

// Get returns the object at key. The objects a lister returns are the
// cache's and must not be modified.
func (l *Lister[T]) Get(key string) (*T, bool) { return l.s.get(key) }

// List returns every object, sorted by key.
func (l *Lister[T]) List() []*T {
	l.s.mu.RLock()
	defer l.s.mu.RUnlock()
	keys := sortedKeys(l.s.items)
	out := make([]*T, len(keys))
	for n, k := range keys {
		out[n] = l.s.items[k]
	}
	return out
}

// Keys returns every key, sorted.
func (l *Lister[T]) Keys() []string { return l.s.sortedKeys() }

// ByIndex returns the objects filed under value in the index name, sorted
// by key. Errors: not_found for an index the informer does not have.
func (l *Lister[T]) ByIndex(name, value string) ([]*T, error) {
	l.s.mu.RLock()
	defer l.s.mu.RUnlock()
	idx, ok := l.s.indices[name]
	if !ok {
		return nil, apierror.Errorf(apierror.CodeNotFound, "informer of %s has no index %q", l.s.req.Topic, name)
	}
	keys := make([]string, 0, len(idx[value]))
	for k := range idx[value] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*T, len(keys))
	for n, k := range keys {
		out[n] = l.s.items[k]
	}
	return out, nil
}

// IndexValues returns the values the index name files objects under,
// sorted. Errors: not_found for an index the informer does not have.
func (l *Lister[T]) IndexValues(name string) ([]string, error) {
	l.s.mu.RLock()
	defer l.s.mu.RUnlock()
	idx, ok := l.s.indices[name]
	if !ok {
		return nil, apierror.Errorf(apierror.CodeNotFound, "informer of %s has no index %q", l.s.req.Topic, name)
	}
	return sortedKeys(idx), nil
}

// String names the informer, for logs.
func (s *SharedInformer[T]) String() string {
	return fmt.Sprintf("shared informer of %s %s topic %s", s.f.env.Contract, s.f.env.Version, s.req.Topic)
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
