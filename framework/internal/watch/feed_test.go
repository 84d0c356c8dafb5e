package watch

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// recordingSub is a feed subscriber that records what it is handed and
// whose queue holds at most room changes.
type recordingSub struct {
	room      int
	snapshots []map[string]string
	changes   []string
	// woken is len(changes) at each wake.
	woken []int
}

func (r *recordingSub) snapshot(raw map[string]*feedFrame, _ string) {
	lines := map[string]string{}
	for k, fr := range raw {
		lines[k] = string(fr.line)
	}
	r.snapshots = append(r.snapshots, lines)
	r.changes = nil
}

func (r *recordingSub) wake() { r.woken = append(r.woken, len(r.changes)) }

func (r *recordingSub) change(key string, _ *feedFrame) bool {
	if len(r.changes) >= r.room {
		return false
	}
	r.changes = append(r.changes, key)
	return true
}

// TestFeedHandsAFullSubscriberItsState: a subscriber whose queue is full
// is handed the feed's whole state as a snapshot, while the others go on
// receiving changes; each snapshot is the subscriber's own map.
func TestFeedHandsAFullSubscriberItsState(t *testing.T) {
	f := &feed{subs: map[subscriber]struct{}{}}
	roomy, full := &recordingSub{room: 100}, &recordingSub{room: 1}
	f.subs[roomy], f.subs[full] = struct{}{}, struct{}{}
	f.publishSnapshot(map[string]*feedFrame{"a": newFeedFrame([]byte("a1"))}, "i")
	f.publishChange(protocol.FrameSet, "b", newFeedFrame([]byte("b1")))
	f.publishChange(protocol.FrameSet, "c", newFeedFrame([]byte("c1")))
	f.publishChange(protocol.FrameDelete, "a", newFeedFrame([]byte("a-deleted")))

	assert.Equal(t, []string{"b", "c", "a"}, roomy.changes)
	require.Len(t, roomy.snapshots, 1)
	require.Len(t, full.snapshots, 2, "the first snapshot, then the state when its queue of one was full")
	assert.Equal(t, map[string]string{"a": "a1", "b": "b1", "c": "c1"}, full.snapshots[1])
	assert.Equal(t, []string{"a"}, full.changes, "after its snapshot it is handed changes again")
	assert.Equal(t, map[string]string{"a": "a1"}, roomy.snapshots[0], "a subscriber's snapshot is not changed under it")
}

// TestFeedWakesItsSubscribersOncePerBurst: the changes of every frame the
// feed's reader holds read are queued before the subscribers are woken,
// once, and the last burst's before the stream's end is reported.
func TestFeedWakesItsSubscribersOncePerBurst(t *testing.T) {
	f := &feed{env: &Env{MaxFrameBytes: 1 << 20}, subs: map[subscriber]struct{}{}}
	sub := &recordingSub{room: 100}
	f.subs[sub] = struct{}{}
	frame := func(key string, rev uint64) string {
		line, _ := frames.EncodeSet(frames.Change{Key: key, Epoch: "e", Seq: rev, Rev: rev}, []byte(`{"n":1}`))
		return string(line)
	}
	// Each reader is one read of the connection: a burst.
	body := io.MultiReader(
		strings.NewReader(frame("a", 1)+frame("b", 2)+frame("c", 3)),
		strings.NewReader(frame("a", 4)+`{"type":"ping"}`+"\n"+frame("d", 5)),
	)
	_, err := f.readFrames(context.Background(), f.newStreamRead(nil, true), body, func() {})
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, []string{"a", "b", "c", "a", "d"}, sub.changes)
	assert.Equal(t, []int{3, 5}, sub.woken, "one wake a burst, after its changes")
}
