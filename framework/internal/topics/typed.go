package topics

// A topic's typed surface in process: the read-only view and the server's
// writer (framework.TopicView, framework.TopicWriter) and the writer's
// earlier forms (fork mode), each change converted once and written to each.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// View reads the current objects of a topic its server holds.
// Objects are decoded from their stored JSON on every read.
type View[T any] struct {
	store *Store
}

// TopicView is View under the name a Writer embeds it by (the field
// framework.TopicWriter's users know).
type TopicView[T any] = View[T]

// NewView returns the view of s's objects as T.
func NewView[T any](s *Store) *View[T] { return &View[T]{store: s} }

// StoreOf returns the store v reads.
func StoreOf[T any](v *View[T]) *Store { return v.store }

// Get returns the object at key, decoded, and whether there is one.
func (v *View[T]) Get(key string) (*T, bool) {
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
func (v *View[T]) Version(key string) (ObjectVersion, bool) {
	_, ver, ok := v.store.Get(key)
	return ver, ok
}

// Keys returns the topic's keys, sorted.
func (v *View[T]) Keys() []string { return v.store.Keys() }

// Len returns how many keys the topic holds.
func (v *View[T]) Len() int { return v.store.Len() }

// WriterConfig is what a Writer takes from its server.
type WriterConfig[T any] struct {
	ID    WriterID
	Epoch string
	// Key reads an object's key (KeyReader).
	Key func(obj *T, raw []byte) (string, error)
	// Marshal encodes an object as the server encodes messages.
	Marshal func(any) ([]byte, error)
	// Header is the header a change made on behalf of ctx carries (its
	// trace context), Holder the share key of the peer ctx carries, ""
	// for none.
	Header func(ctx context.Context) []byte
	Holder func(ctx context.Context) string
	// Contract is the server's contract version the topic is served at,
	// for its earlier forms.
	Contract any
}

// Validator is an object that checks itself before it is written
// (framework.Validator).
type Validator interface{ Validate() error }

// Writer writes a topic whose writer is the server, in process. It is
// safe for concurrent use; writes of one key are applied in the order they
// are made. A write never waits for watchers: each watcher is sent the
// latest state of every key it has not seen yet, at its own pace.
type Writer[T any] struct {
	*TopicView[T]
	cfg WriterConfig[T]

	// forks are the earlier versions' forms of this topic: each change is
	// converted once and written to each. mirrorMu keeps a key's changes in
	// the same order in every form. It is taken before the store's lock
	// (see Store.mu for the order).
	mirrorMu sync.Mutex
	forks    []Fork[T]
}

// NewWriter returns the writer of s.
func NewWriter[T any](s *Store, cfg WriterConfig[T]) *Writer[T] {
	return &Writer[T]{TopicView: NewView[T](s), cfg: cfg}
}

// ContractOf returns the contract w's topic is served at (WriterConfig.Contract).
func ContractOf[T any](w *Writer[T]) any { return w.cfg.Contract }

// Epoch returns the writer's epoch, new in every process.
func (w *Writer[T]) Epoch() string { return w.cfg.Epoch }

// Set stores obj under the key in its key field, replacing what was there,
// and sends it to every watcher. Errors: invalid_argument when obj does not
// encode, its key field is missing or not a non-empty string, or its
// Validate method fails; resource_exhausted when the topic holds its limit
// of keys or of bytes.
func (w *Writer[T]) Set(obj *T) error { return w.set(context.Background(), "", obj) }

// SetContext is Set made on behalf of ctx's request: with the server's
// Propagator set, the change carries what ctx holds (its trace context) to
// every watcher, so that their deliveries link to this write. The key stays
// the server's own, as with Set.
func (w *Writer[T]) SetContext(ctx context.Context, obj *T) error { return w.set(ctx, "", obj) }

// SetFor stores obj as Set does, on behalf of the peer whose request ctx
// carries: a handler that publishes what a peer reported charges the key
// to that peer, so that one peer, or one stolen certificate, cannot fill
// the topic for everyone. The key counts against the peer's share of the
// topic's keys and bytes, over all its sessions, and the topic's last
// quarter is kept for peers holding little (docs/security.md, "Shared
// bounds"); beyond them the write is refused resource_exhausted. The key
// stays the server's: it counts against the peer whose write set it last,
// until the server sets it itself, another peer's write sets it, or it is
// deleted. A ctx that carries no peer is the server's own write, as Set.
// The change carries ctx's trace context, as with SetContext.
func (w *Writer[T]) SetFor(ctx context.Context, obj *T) error {
	return w.set(ctx, w.cfg.Holder(ctx), obj)
}

// set stores obj, charged to holder ("" for the server itself), carrying
// ctx's trace context to the watchers.
func (w *Writer[T]) set(ctx context.Context, holder string, obj *T) error {
	if obj == nil {
		return apierror.Errorf(apierror.CodeInvalidArgument, "%s: nil object", w.store.Name())
	}
	if val, ok := any(obj).(Validator); ok {
		if err := val.Validate(); err != nil {
			return apierror.Errorf(apierror.CodeInvalidArgument, "%s: %v", w.store.Decl().Object, err)
		}
	}
	raw, err := w.cfg.Marshal(obj)
	if err != nil {
		return apierror.Errorf(apierror.CodeInvalidArgument, "%s does not encode: %v", w.store.Decl().Object, err)
	}
	key, err := w.cfg.Key(obj, raw)
	if err != nil {
		return err
	}
	if w.hasForks() {
		w.mirrorMu.Lock()
		defer w.mirrorMu.Unlock()
	}
	header := w.cfg.Header(ctx)
	if _, _, err = w.store.Set(Write{Writer: w.cfg.ID, Holder: holder, Epoch: w.cfg.Epoch, Key: key, Raw: raw, Header: header}); err != nil {
		return err
	}
	return w.mirrorSet(ctx, obj)
}

// Delete removes the object at key and tells every watcher; deleting a key
// that is not there does nothing.
func (w *Writer[T]) Delete(key string) error {
	return w.DeleteContext(context.Background(), key)
}

// DeleteContext is Delete made on behalf of ctx's request, as SetContext
// is.
func (w *Writer[T]) DeleteContext(ctx context.Context, key string) error {
	if w.hasForks() {
		w.mirrorMu.Lock()
		defer w.mirrorMu.Unlock()
	}
	if _, _, err := w.store.Delete(Write{Writer: w.cfg.ID, Epoch: w.cfg.Epoch, Key: key, Header: w.cfg.Header(ctx)}); err != nil {
		return err
	}
	return w.mirrorDelete(ctx, key)
}

// Fork is one earlier version's form of a server-written topic.
type Fork[T any] struct {
	Version string
	Store   *Store
	// Set and Del write a change to this form, carrying ctx's trace
	// context as the current form's change does.
	Set func(ctx context.Context, obj *T) error
	Del func(ctx context.Context, key string) error
}

// AddFork writes what w holds in f's form too, then mirrors every later
// change into it, so that the two forms hold the same keys from now on.
// A current object f cannot take is returned as an error with its key.
func (w *Writer[T]) AddFork(f Fork[T]) error {
	w.mirrorMu.Lock()
	defer w.mirrorMu.Unlock()
	for _, key := range w.Keys() {
		if obj, ok := w.Get(key); ok {
			if err := f.Set(context.Background(), obj); err != nil {
				return fmt.Errorf("%s at %s: %w", key, f.Version, err)
			}
		}
	}
	w.forks = append(w.forks, f)
	return nil
}

func (w *Writer[T]) hasForks() bool {
	w.mirrorMu.Lock()
	defer w.mirrorMu.Unlock()
	return len(w.forks) > 0
}

// mirrorSet writes obj's earlier forms; the current form is already written,
// so a failure names the version that missed the change.
func (w *Writer[T]) mirrorSet(ctx context.Context, obj *T) error {
	var errs []error
	for _, f := range w.forks {
		if err := f.Set(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("the %s form: %w", f.Version, err))
		}
	}
	return w.mirrorError(errors.Join(errs...))
}

func (w *Writer[T]) mirrorDelete(ctx context.Context, key string) error {
	var errs []error
	for _, f := range w.forks {
		if err := f.Del(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("the %s form: %w", f.Version, err))
		}
	}
	return w.mirrorError(errors.Join(errs...))
}

func (w *Writer[T]) mirrorError(err error) error {
	if err == nil {
		return nil
	}
	return apierror.NewError(apierror.CodeOf(err), fmt.Errorf("%s: written at %s, but %w", w.store.Name(), w.store.Version(), err))
}

// Attach makes the server's writer of the topic live, in every form:
// watchers are told, in the synced frame and in heartbeat answers, that
// this replica's topic is the one to watch. A replica that takes over
// writing (a newly elected leader) writes its state and then attaches.
func (w *Writer[T]) Attach() { w.setAttached(true) }

// Detach makes the topic writer-less, as on a replica that lost its
// leadership: the objects stay as they are (watchers see nothing change,
// so none of them is shown an empty topic), but informers move to a
// replica whose writer is attached as soon as one is, and none syncs from
// this one meanwhile. Writes are still applied, so a detached writer can
// prepare its state before it attaches.
func (w *Writer[T]) Detach() { w.setAttached(false) }

func (w *Writer[T]) setAttached(on bool) {
	w.store.SetAttached(on)
	for _, f := range w.forks {
		f.Store.SetAttached(on)
	}
}

// Attached reports whether the writer is attached.
func (w *Writer[T]) Attached() bool { return w.store.WriterLive() }
