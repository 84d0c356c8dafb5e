package topics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopicHistoryBoundsAndCoverage(t *testing.T) {
	h := newChangeHistory(3, time.Minute)
	del := func(key string, rev uint64, at time.Duration) {
		ch := encodeDeleteFrame(key, ObjectVersion{Epoch: "e", Seq: rev}, rev, false, nil)
		h.bury(ch, nil, int64(at))
	}
	none := func(string) bool { return false }
	keys := func(chs []*change) []string {
		var out []string
		for _, ch := range chs {
			out = append(out, ch.key)
		}
		return out
	}

	del("a", 2, 0)
	del("b", 4, time.Second)
	del("a", 6, 2*time.Second) // a deleted again: only its newest tombstone counts
	assert.True(t, h.covers(0, 6, int64(2*time.Second)), "nothing forgotten yet")
	assert.Equal(t, []string{"b", "a"}, keys(h.deletesAfter(0, none, nil)))
	assert.Equal(t, []string{"a"}, keys(h.deletesAfter(4, none, nil)))
	assert.Empty(t, h.deletesAfter(6, none, nil))
	assert.Equal(t, []string{"b"}, keys(h.deletesAfter(0, func(k string) bool { return k == "a" }, nil)),
		"a key set again is sent as its set, not its tombstone")
	assert.False(t, h.covers(7, 6, int64(2*time.Second)), "a point after the topic's revision is not ours")

	// A fourth tombstone pushes out the first (count bound).
	del("c", 8, 3*time.Second)
	assert.False(t, h.covers(1, 8, int64(3*time.Second)), "the delete at 2 is forgotten")
	assert.True(t, h.covers(2, 8, int64(3*time.Second)))
	assert.Equal(t, []string{"b", "a", "c"}, keys(h.deletesAfter(2, none, nil)))

	// Age: past a minute the tombstones at 1s and 2s are forgotten.
	require.True(t, h.covers(2, 8, int64(time.Minute)))
	assert.False(t, h.covers(5, 8, int64(time.Minute+2*time.Second+1)))
	assert.True(t, h.covers(6, 8, int64(time.Minute+2*time.Second+1)))
	assert.Equal(t, []string{"c"}, keys(h.deletesAfter(6, none, nil)))
}
