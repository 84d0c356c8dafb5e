package framework

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-dev/lockstep/handshake"
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
