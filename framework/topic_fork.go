package framework

import (
	"context"
	"errors"
	"fmt"
)

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
// the earlier version's topic: the cost is per change, not per watcher. It
// returns a read-only view of the earlier form. Call it before the server
// starts, and before writing through current; it panics on setup mistakes,
// like [ServeTopic].
//
// For generated code: lockstep-gen emits it for the topics of a fork (forkFrom).
func ForkTopic[Old, New any](s *Server, old *Contract, current *TopicWriter[New], down func(*New) (*Old, error), opts ...TopicOption) *TopicView[Old] {
	name := current.store.name
	newer := current.store.contract
	if err := checkForkPair(old, newer); err != nil {
		panic("lockstep: " + err.Error())
	}
	if _, ok := old.Topic(name); !ok {
		panic(fmt.Sprintf("lockstep: contract %s %s declares no topic %s", old.Name(), old.Version(), name))
	}
	earlier := serveTopic[Old](s, old, name, opts) // the earlier version alone: fork mode speaks no chain
	earlier.store.setAttached(current.Attached())  // one writer, attached in every form or none
	current.mirrorMu.Lock()
	defer current.mirrorMu.Unlock()
	current.forks = append(current.forks, topicFork[New]{
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
	})
	return earlier.TopicView
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
	return NewError(CodeOf(err), fmt.Errorf("%s: written at %s, but %w", w.store.name, w.store.contract.Version(), err))
}
