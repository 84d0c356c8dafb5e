package framework

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplayStoreAnswersAReplayFromTheRecord(t *testing.T) {
	s := newReplayStore(time.Minute, 8, defaultIdempotencyMaxBytes)
	t0 := time.Unix(1000, 0)
	k := replayKey{contract: "c", peer: "kubelet/a", key: "k1"}
	d := requestDigest("M", []byte(`{"n":1}`))

	rec, first, err := s.begin(k, d, t0)
	require.NoError(t, err)
	require.True(t, first)

	// A replay while the first runs waits for its answer.
	again, first, err := s.begin(k, d, t0.Add(time.Second))
	require.NoError(t, err)
	require.False(t, first)
	require.Same(t, rec, again)
	select {
	case <-again.done:
		t.Fatal("the record was done before the first call answered")
	default:
	}
	s.finish(k, rec, recordedAnswer{out: []byte(`{"ok":true}`)})
	<-again.done
	assert.Equal(t, recordedAnswer{out: []byte(`{"ok":true}`)}, again.answer)

	// The same key from another peer, or of another contract, is its own.
	_, first, err = s.begin(replayKey{contract: "c", peer: "kubelet/b", key: "k1"}, d, t0)
	require.NoError(t, err)
	assert.True(t, first)
	_, first, err = s.begin(replayKey{contract: "other", peer: "kubelet/a", key: "k1"}, d, t0)
	require.NoError(t, err)
	assert.True(t, first)
}

func TestReplayStoreRefusesAKeyReusedForAnotherRequest(t *testing.T) {
	s := newReplayStore(time.Minute, 8, defaultIdempotencyMaxBytes)
	t0 := time.Unix(1000, 0)
	k := replayKey{contract: "c", peer: "p", key: "k"}
	rec, _, err := s.begin(k, requestDigest("M", []byte(`{"n":1}`)), t0)
	require.NoError(t, err)
	s.finish(k, rec, recordedAnswer{out: []byte(`{}`)})

	_, _, err = s.begin(k, requestDigest("M", []byte(`{"n":2}`)), t0)
	assert.Equal(t, CodeInvalidArgument, CodeOf(err))
	_, _, err = s.begin(k, requestDigest("Other", []byte(`{"n":1}`)), t0)
	assert.Equal(t, CodeInvalidArgument, CodeOf(err), "the method is part of the request")
}

func TestReplayStoreForgetsByAgeAndByCount(t *testing.T) {
	s := newReplayStore(time.Minute, 3, defaultIdempotencyMaxBytes)
	t0 := time.Unix(1000, 0)
	d := requestDigest("M", nil)
	key := func(i int) replayKey { return replayKey{contract: "c", peer: "p", key: fmt.Sprint(i)} }
	for i := range 5 {
		rec, first, err := s.begin(key(i), d, t0.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
		require.True(t, first)
		s.finish(key(i), rec, recordedAnswer{out: []byte(`{}`)})
	}
	// Only the newest three are kept.
	assert.Equal(t, 3, s.size())
	rec, first, _ := s.begin(key(0), d, t0.Add(5*time.Second))
	assert.True(t, first, "the oldest record was evicted by count")
	s.finish(key(0), rec, recordedAnswer{out: []byte(`{}`)})
	_, first, _ = s.begin(key(4), d, t0.Add(5*time.Second))
	assert.False(t, first, "a recent record is kept")

	// Past the window, every finished record goes; sweep frees peers
	// left empty.
	s.sweep(t0.Add(2 * time.Minute))
	assert.Equal(t, 0, s.size())
	assert.Empty(t, s.peers)
}

func TestReplayStoreKeepsTooLargeAnswersAsAConflict(t *testing.T) {
	s := newReplayStore(time.Minute, 8, defaultIdempotencyMaxBytes)
	k := replayKey{contract: "c", peer: "p", key: "k"}
	rec, _, _ := s.begin(k, requestDigest("M", nil), time.Unix(1000, 0))
	s.finish(k, rec, recordedAnswer{out: make([]byte, maxRecordedAnswer+1)})
	assert.Nil(t, rec.answer.out)
	assert.Equal(t, CodeConflict, CodeOf(rec.answer.err))
}

// A record's key costs its bytes as its answer does: a peer sending keys
// of a MiB each (headers allow 64 KiB; the store bounds whatever comes)
// keeps no more than recordBytesPerPeer of them, and another peer's
// records are not forgotten for it.
func TestReplayStoreCountsKeysAndBoundsEachPeer(t *testing.T) {
	s := newReplayStore(time.Minute, 1000, defaultIdempotencyMaxBytes)
	t0 := time.Unix(1000, 0)
	d := requestDigest("M", nil)
	other := replayKey{contract: "c", peer: "honest", instance: "i", key: "k"}
	rec, _, err := s.begin(other, d, t0)
	require.NoError(t, err)
	s.finish(other, rec, recordedAnswer{out: []byte(`{}`)})
	long := string(make([]byte, 1<<20))
	for i := range 20 {
		k := replayKey{contract: "c", peer: "greedy", instance: fmt.Sprint("i-", i), key: fmt.Sprint(i, long)}
		rec, first, err := s.begin(k, d, t0)
		require.NoError(t, err)
		require.True(t, first)
		s.finish(k, rec, recordedAnswer{out: []byte(`{}`)})
	}
	assert.LessOrEqual(t, s.size(), 1+recordBytesPerPeer>>20, "records of one peer, keys counted")
	_, first, _ := s.begin(other, d, t0)
	assert.False(t, first, "another peer's record is kept")
}

// Every peer's records together are bounded too: peers that fill their
// own bounds take the oldest records of the peer holding the most, never
// those of a peer that holds less than an equal share.
func TestReplayStoreBoundsEveryPeerTogether(t *testing.T) {
	const maxBytes = 64 << 10
	s := newReplayStore(time.Minute, 1000, maxBytes)
	t0 := time.Unix(1000, 0)
	d := requestDigest("M", nil)
	honest := replayKey{contract: "c", peer: "honest", instance: "i", key: "k"}
	rec, _, err := s.begin(honest, d, t0)
	require.NoError(t, err)
	s.finish(honest, rec, recordedAnswer{out: []byte(`{}`)})
	key := string(make([]byte, 1<<10))
	for p := range 8 {
		for i := range 32 {
			k := replayKey{contract: "c", peer: fmt.Sprint("greedy-", p), instance: "i", key: fmt.Sprint(i, key)}
			rec, first, err := s.begin(k, d, t0.Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, err)
			require.True(t, first)
			s.finish(k, rec, recordedAnswer{out: []byte(`{}`)})
			require.LessOrEqual(t, s.bytes, maxBytes, "peer %d, record %d", p, i)
		}
	}
	_, first, _ := s.begin(honest, d, t0)
	assert.False(t, first, "the honest peer's record is kept")
	// Each greedy peer kept its newest records, about an equal share.
	for p := range 8 {
		newest := replayKey{contract: "c", peer: fmt.Sprint("greedy-", p), instance: "i", key: fmt.Sprint(31, key)}
		_, first, _ := s.begin(newest, d, t0)
		assert.False(t, first, "greedy peer %d's newest record is kept", p)
		assert.LessOrEqual(t, s.peers["c\x00"+fmt.Sprint("greedy-", p)].bytes, maxBytes/8+2<<10, "greedy peer %d", p)
	}
	s.sweep(t0.Add(2 * time.Minute))
	assert.Zero(t, s.bytes)
	assert.Empty(t, s.largest)
}

// A record whose call still runs is never evicted, by count, bytes or
// age: a resend of that call (its connection cut) must wait for the first
// one's answer, not run the handler beside it. It goes once finished.
func TestReplayStoreKeepsTheRecordsOfCallsInFlight(t *testing.T) {
	s := newReplayStore(time.Minute, 2, 8<<10)
	t0 := time.Unix(1000, 0)
	d := requestDigest("M", nil)
	running := replayKey{contract: "c", peer: "p", instance: "i", key: "running"}
	rec, first, err := s.begin(running, d, t0)
	require.NoError(t, err)
	require.True(t, first)
	long := string(make([]byte, 1<<10))
	for i := range 16 { // over the count (2) and the bytes over every peer (8 KiB)
		k := replayKey{contract: "c", peer: "p", instance: "i", key: fmt.Sprint(i, long)}
		r, first, err := s.begin(k, d, t0.Add(time.Duration(i)*time.Millisecond))
		require.NoError(t, err)
		require.True(t, first)
		s.finish(k, r, recordedAnswer{out: []byte(`{}`)})
	}
	s.sweep(t0.Add(2 * time.Minute)) // past the window
	again, first, err := s.begin(running, d, t0.Add(2*time.Minute))
	require.NoError(t, err)
	require.False(t, first, "the record of a call in flight was evicted")
	require.Same(t, rec, again)
	assert.Equal(t, 1, s.size(), "the finished records went")

	s.finish(running, rec, recordedAnswer{out: []byte(`{}`)})
	s.sweep(t0.Add(2 * time.Minute))
	assert.Zero(t, s.size(), "a finished record past the window goes")
	assert.Zero(t, s.bytes)
}
