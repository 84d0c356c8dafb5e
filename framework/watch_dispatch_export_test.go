package framework

import (
	"bytes"
	"context"
	"io"
	"log/slog"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
)

// DispatchRig is a feed without a stream and informers of T on it: what
// an informer does per delivery (queue, wake, decode or copy, cache,
// handlers), measured without a server or a connection.
type DispatchRig[T any] struct {
	feed *watchFeed
	infs []*Informer[T]
}

// NewDispatchRig starts n informers of T on one feed, each decoding every
// frame itself (decodeEach) or copying the feed's one decode, synced to
// the set frames in snapshot.
func NewDispatchRig[T any](ctx context.Context, n int, decodeEach bool, h InformerHandlers[T], snapshot [][]byte) *DispatchRig[T] {
	c := &Client{ctx: ctx, cfg: ClientConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	done := make(chan struct{})
	close(done)
	f := &watchFeed{c: c, topic: "bench", subs: map[feedSubscriber]struct{}{}, cancel: func() {}, done: done}
	r := &DispatchRig[T]{feed: f}
	for range n {
		i := newInformer(ctx, c, "bench", h, informerMode{decodeEach: decodeEach})
		i.feed = f
		f.subs[i] = struct{}{}
		r.infs = append(r.infs, i)
		go i.process()
	}
	raw := map[string]*feedFrame{}
	for _, line := range snapshot {
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

// SetFrameLine is the set frame a server sends for key's object raw at
// version seq, revision rev.
func SetFrameLine(key string, seq, rev uint64, raw []byte) []byte {
	ch, _ := encodeSetFrame(key, ObjectVersion{Epoch: "bench", Seq: seq}, rev, raw, nil)
	return ch.frame
}
