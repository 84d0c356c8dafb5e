package replay

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

func TestReplayStoreAnswersAReplayFromTheRecord(t *testing.T) {
	s := New(time.Minute, 8, DefaultMaxBytes)
	t0 := time.Unix(1000, 0)
	k := Key{Contract: "c", Peer: "kubelet/a", Key: "k1"}
	d := RequestDigest("M", []byte(`{"n":1}`))

	rec, first, err := s.Begin(k, d, t0)
	require.NoError(t, err)
	require.True(t, first)

	// A replay while the first runs waits for its answer.
	again, first, err := s.Begin(k, d, t0.Add(time.Second))
	require.NoError(t, err)
	require.False(t, first)
	require.Same(t, rec, again)
	select {
	case <-again.done:
		t.Fatal("the record was done before the first call answered")
	default:
	}
	s.Finish(k, rec, Answer{Out: []byte(`{"ok":true}`)})
	<-again.done
	assert.Equal(t, Answer{Out: []byte(`{"ok":true}`)}, again.answer)

	// The same key from another peer, or of another contract, is its own.
	_, first, err = s.Begin(Key{Contract: "c", Peer: "kubelet/b", Key: "k1"}, d, t0)
	require.NoError(t, err)
	assert.True(t, first)
	_, first, err = s.Begin(Key{Contract: "other", Peer: "kubelet/a", Key: "k1"}, d, t0)
	require.NoError(t, err)
	assert.True(t, first)
}

func TestReplayStoreRefusesAKeyReusedForAnotherRequest(t *testing.T) {
	s := New(time.Minute, 8, DefaultMaxBytes)
	t0 := time.Unix(1000, 0)
	k := Key{Contract: "c", Peer: "p", Key: "k"}
	rec, _, err := s.Begin(k, RequestDigest("M", []byte(`{"n":1}`)), t0)
	require.NoError(t, err)
	s.Finish(k, rec, Answer{Out: []byte(`{}`)})

	_, _, err = s.Begin(k, RequestDigest("M", []byte(`{"n":2}`)), t0)
	assert.Equal(t, apierror.CodeInvalidArgument, apierror.CodeOf(err))
	_, _, err = s.Begin(k, RequestDigest("Other", []byte(`{"n":1}`)), t0)
	assert.Equal(t, apierror.CodeInvalidArgument, apierror.CodeOf(err), "the method is part of the request")
}

func TestReplayStoreForgetsByAgeAndByCount(t *testing.T) {
	s := New(time.Minute, 3, DefaultMaxBytes)
	t0 := time.Unix(1000, 0)
	d := RequestDigest("M", nil)
	key := func(i int) Key { return Key{Contract: "c", Peer: "p", Key: fmt.Sprint(i)} }
	for i := range 5 {
		rec, first, err := s.Begin(key(i), d, t0.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
		require.True(t, first)
		s.Finish(key(i), rec, Answer{Out: []byte(`{}`)})
	}
	// Only the newest three are kept.
	assert.Equal(t, 3, s.Size())
	rec, first, _ := s.Begin(key(0), d, t0.Add(5*time.Second))
	assert.True(t, first, "the oldest record was evicted by count")
	s.Finish(key(0), rec, Answer{Out: []byte(`{}`)})
	_, first, _ = s.Begin(key(4), d, t0.Add(5*time.Second))
	assert.False(t, first, "a recent record is kept")

	// Past the window, every finished record goes; sweep frees peers
	// left empty.
	s.Sweep(t0.Add(2 * time.Minute))
	assert.Equal(t, 0, s.Size())
	assert.Empty(t, s.peers)
}

func TestReplayStoreKeepsTooLargeAnswersAsAConflict(t *testing.T) {
	s := New(time.Minute, 8, DefaultMaxBytes)
	k := Key{Contract: "c", Peer: "p", Key: "k"}
	rec, _, _ := s.Begin(k, RequestDigest("M", nil), time.Unix(1000, 0))
	s.Finish(k, rec, Answer{Out: make([]byte, MaxRecordedAnswer+1)})
	assert.Nil(t, rec.answer.Out)
	assert.Equal(t, apierror.CodeConflict, apierror.CodeOf(rec.answer.Err))
}

// A record's key costs its bytes as its answer does: a peer sending keys
// of a MiB each (headers allow 64 KiB; the store bounds whatever comes)
// keeps no more than recordBytesPerPeer of them, and another peer's
// records are not forgotten for it.
func TestReplayStoreCountsKeysAndBoundsEachPeer(t *testing.T) {
	s := New(time.Minute, 1000, DefaultMaxBytes)
	t0 := time.Unix(1000, 0)
	d := RequestDigest("M", nil)
	other := Key{Contract: "c", Peer: "honest", Instance: "i", Key: "k"}
	rec, _, err := s.Begin(other, d, t0)
	require.NoError(t, err)
	s.Finish(other, rec, Answer{Out: []byte(`{}`)})
	long := string(make([]byte, 1<<20))
	for i := range 20 {
		k := Key{Contract: "c", Peer: "greedy", Instance: fmt.Sprint("i-", i), Key: fmt.Sprint(i, long)}
		rec, first, err := s.Begin(k, d, t0)
		require.NoError(t, err)
		require.True(t, first)
		s.Finish(k, rec, Answer{Out: []byte(`{}`)})
	}
	assert.LessOrEqual(t, s.Size(), 1+recordBytesPerPeer>>20, "records of one peer, keys counted")
	_, first, _ := s.Begin(other, d, t0)
	assert.False(t, first, "another peer's record is kept")
}

// Every peer's records together are bounded too: peers that fill their
// own bounds take the oldest records of the peer holding the most, never
// those of a peer that holds less than an equal share.
func TestReplayStoreBoundsEveryPeerTogether(t *testing.T) {
	const maxBytes = 64 << 10
	s := New(time.Minute, 1000, maxBytes)
	t0 := time.Unix(1000, 0)
	d := RequestDigest("M", nil)
	honest := Key{Contract: "c", Peer: "honest", Instance: "i", Key: "k"}
	rec, _, err := s.Begin(honest, d, t0)
	require.NoError(t, err)
	s.Finish(honest, rec, Answer{Out: []byte(`{}`)})
	key := string(make([]byte, 1<<10))
	for p := range 8 {
		for i := range 32 {
			k := Key{Contract: "c", Peer: fmt.Sprint("greedy-", p), Instance: "i", Key: fmt.Sprint(i, key)}
			rec, first, err := s.Begin(k, d, t0.Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, err)
			require.True(t, first)
			s.Finish(k, rec, Answer{Out: []byte(`{}`)})
			require.LessOrEqual(t, s.bytes, maxBytes, "peer %d, record %d", p, i)
		}
	}
	_, first, _ := s.Begin(honest, d, t0)
	assert.False(t, first, "the honest peer's record is kept")
	// Each greedy peer kept its newest records, about an equal share.
	for p := range 8 {
		newest := Key{Contract: "c", Peer: fmt.Sprint("greedy-", p), Instance: "i", Key: fmt.Sprint(31, key)}
		_, first, _ := s.Begin(newest, d, t0)
		assert.False(t, first, "greedy peer %d's newest record is kept", p)
		assert.LessOrEqual(t, s.peers["c\x00"+fmt.Sprint("greedy-", p)].bytes, maxBytes/8+2<<10, "greedy peer %d", p)
	}
	s.Sweep(t0.Add(2 * time.Minute))
	assert.Zero(t, s.bytes)
	assert.Empty(t, s.largest)
}

// A record whose call still runs is never evicted, by count, bytes or
// age: a resend of that call (its connection cut) must wait for the first
// one's answer, not run the handler beside it. It goes once finished.
func TestReplayStoreKeepsTheRecordsOfCallsInFlight(t *testing.T) {
	s := New(time.Minute, 2, 8<<10)
	t0 := time.Unix(1000, 0)
	d := RequestDigest("M", nil)
	running := Key{Contract: "c", Peer: "p", Instance: "i", Key: "running"}
	rec, first, err := s.Begin(running, d, t0)
	require.NoError(t, err)
	require.True(t, first)
	long := string(make([]byte, 1<<10))
	for i := range 16 { // over the count (2) and the bytes over every peer (8 KiB)
		k := Key{Contract: "c", Peer: "p", Instance: "i", Key: fmt.Sprint(i, long)}
		r, first, err := s.Begin(k, d, t0.Add(time.Duration(i)*time.Millisecond))
		require.NoError(t, err)
		require.True(t, first)
		s.Finish(k, r, Answer{Out: []byte(`{}`)})
	}
	s.Sweep(t0.Add(2 * time.Minute)) // past the window
	again, first, err := s.Begin(running, d, t0.Add(2*time.Minute))
	require.NoError(t, err)
	require.False(t, first, "the record of a call in flight was evicted")
	require.Same(t, rec, again)
	assert.Equal(t, 1, s.Size(), "the finished records went")

	s.Finish(running, rec, Answer{Out: []byte(`{}`)})
	s.Sweep(t0.Add(2 * time.Minute))
	assert.Zero(t, s.Size(), "a finished record past the window goes")
	assert.Zero(t, s.bytes)
}
