package watch

import (
	"bytes"
	"context"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
)

// DispatchRig is a feed without a stream and informers of T on it: what
// an informer does per delivery (queue, wake, decode or copy, cache,
// handlers), measured without a server or a connection. It exists for
// package framework's dispatch benchmark, which reaches it through an
// export_test file.
type DispatchRig[T any] struct {
	feed *feed
	infs []*Informer[T]
}

// RigConfig shapes a [DispatchRig].
type RigConfig struct {
	// Informers is how many informers the feed has, each decoding every
	// frame itself (DecodeEach) or copying the feed's one decode.
	Informers  int
	DecodeEach bool
	// Snapshot is the set frames the informers sync to.
	Snapshot [][]byte
}

// NewDispatchRig starts the informers of T that cfg asks for on one feed
// of env's client, with handlers h, and waits until they synced.
func NewDispatchRig[T any](ctx context.Context, env *Env, cfg RigConfig, h InformerHandlers[T]) *DispatchRig[T] {
	done := make(chan struct{})
	close(done)
	f := &feed{env: env, want: Want{Topic: "bench"}, subs: map[subscriber]struct{}{}, cancel: func() {}, done: done}
	r := &DispatchRig[T]{feed: f}
	for range cfg.Informers {
		i := newInformer(ctx, env, Request{Topic: "bench", DecodeEach: cfg.DecodeEach}, h)
		i.feed = f
		f.subs[i] = struct{}{}
		r.infs = append(r.infs, i)
		go i.process()
	}
	raw := map[string]*feedFrame{}
	for _, line := range cfg.Snapshot {
		_, key, _, _ := frames.TypeKey(line)
		raw[key] = newFeedFrame(bytes.Clone(line))
	}
	f.publishSnapshot(raw, "bench")
	for _, i := range r.infs {
		_ = i.WaitForSync(ctx)
	}
	return r
}

// Publish hands the feed a frame as its reader does, without waking the
// informers.
func (r *DispatchRig[T]) Publish(line []byte) {
	typ, key, _, _ := frames.TypeKey(line)
	r.feed.publishChange(typ, key, newFeedFrame(bytes.Clone(line)))
}

// Wake ends a burst: the informers take what was published.
func (r *DispatchRig[T]) Wake() { r.feed.wakeSubscribers() }

// Stop stops the informers.
func (r *DispatchRig[T]) Stop() {
	for _, i := range r.infs {
		i.Stop()
	}
}
