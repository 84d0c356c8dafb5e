package drain

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// phase is a first phase over counts the test sets, on a fake clock.
func phase(clock *clockwork.FakeClock, inFlight, sessions int) (Phase, *atomic.Int64) {
	start := clock.Now()
	var in, last atomic.Int64
	in.Store(int64(inFlight))
	return Phase{
		Clock: clock, Timeout: time.Minute, Quiet: time.Second,
		Now:         func() int64 { return int64(clock.Since(start)) },
		LastArrival: &last, InFlight: &in, Sessions: func() int { return sessions },
		Wake: make(chan struct{}),
	}, &in
}

func TestDrainedWaitsForCallsSessionsAndQuiet(t *testing.T) {
	clock := clockwork.NewFakeClock()
	p, in := phase(clock, 1, 0)
	done, left := p.Drained()
	assert.False(t, done, "a call in flight")
	assert.Equal(t, time.Second, left)
	in.Store(0)
	done, _ = p.Drained()
	assert.False(t, done, "the quiet period is not over")
	clock.Advance(time.Second)
	done, left = p.Drained()
	assert.True(t, done)
	assert.Zero(t, left)

	p, _ = phase(clock, 0, 1)
	clock.Advance(time.Hour)
	done, _ = p.Drained()
	assert.False(t, done, "a session still held")
}

func TestWaitEndsAtTheQuietPeriodOrTheTimeout(t *testing.T) {
	clock := clockwork.NewFakeClock()
	p, _ := phase(clock, 0, 0)
	ended := make(chan struct{})
	go func() { p.Wait(context.Background()); close(ended) }()
	require.NoError(t, clock.BlockUntilContext(context.Background(), 2)) // the deadline and the quiet timer
	select {
	case <-ended:
		t.Fatal("Wait ended before the quiet period")
	default:
	}
	clock.Advance(time.Second)
	<-ended

	p, _ = phase(clock, 1, 0) // never drained: only the timeout ends it
	ended = make(chan struct{})
	go func() { p.Wait(context.Background()); close(ended) }()
	require.NoError(t, clock.BlockUntilContext(context.Background(), 2))
	clock.Advance(time.Minute)
	<-ended
}

func TestRefusalIsAnUnprocessedDrainingAnswerThatCloses(t *testing.T) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(Refusal("nodestatus"))), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.True(t, resp.Close)
	assert.NotEmpty(t, resp.Header.Get(protocol.HeaderDraining))
	assert.NotEmpty(t, resp.Header.Get(protocol.HeaderNotProcessed))
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, body.String(), `"code":"unavailable"`)
	assert.Contains(t, body.String(), "nodestatus is draining")
}
