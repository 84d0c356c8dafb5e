package framework

import (
	"context"
	"io"
	"log/slog"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/watch"
)

// DispatchRig is a feed without a stream and informers of T on it: what
// an informer does per delivery, measured without a server or a
// connection (see internal/watch's DispatchRig).
type DispatchRig[T any] = watch.DispatchRig[T]

// NewDispatchRig starts n informers of T on one feed, each decoding every
// frame itself (decodeEach) or copying the feed's one decode, synced to
// the set frames in snapshot.
func NewDispatchRig[T any](ctx context.Context, n int, decodeEach bool, h InformerHandlers[T], snapshot [][]byte) *DispatchRig[T] {
	c := &Client{ctx: ctx}
	env := &watch.Env{Ctx: ctx, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxQueued: 2 * DefaultTopicMaxKeys,
		Extract: c.extractHeader, Feeds: &watch.Feeds{}}
	return watch.NewDispatchRig(ctx, env, watch.RigConfig{Informers: n, DecodeEach: decodeEach, Snapshot: snapshot}, h)
}

// SetFrameLine is the set frame a server sends for key's object raw at
// version seq, revision rev.
func SetFrameLine(key string, seq, rev uint64, raw []byte) []byte {
	frame, _ := frames.EncodeSet(frames.Change{Key: key, Epoch: "bench", Seq: seq, Rev: rev}, raw)
	return frame
}
