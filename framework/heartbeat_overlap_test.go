package framework_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// heldBeats holds the first heartbeat request a client sends until
// release is closed, as a starved machine holds a request on its way, and
// counts the heartbeats that reached the server and were answered.
type heldBeats struct {
	next     http.RoundTripper
	release  chan struct{}
	sent     atomic.Int64
	answered atomic.Int64
}

func (h *heldBeats) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != protocol.PathHeartbeat {
		return h.next.RoundTrip(r)
	}
	if h.sent.Add(1) == 1 {
		select {
		case <-h.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	resp, err := h.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusOK {
		h.answered.Add(1)
	}
	return resp, err
}

// A heartbeat still on its way does not hold back the next one: the
// server keeps hearing from the client every interval, so a session lives
// on a machine where one round trip takes longer than its TTL. The
// client's heartbeats tick on a fake clock that the test moves on; the
// server's TTL is long, so the held heartbeat's own timeout (its TTL) never
// ends it while the test runs.
func TestAHeartbeatOnItsWayDoesNotHoldBackTheNext(t *testing.T) {
	const beat = 100 * time.Millisecond
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = time.Minute, beat
	})
	next := framework.NewTransport(nil)
	t.Cleanup(next.CloseIdleConnections)
	tr := &heldBeats{next: next, release: make(chan struct{})}
	clock := clockwork.NewFakeClock()
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport, c.Clock = tr, clock
	})
	var once sync.Once
	release := func() { once.Do(func() { close(tr.release) }) }
	t.Cleanup(release) // before the client closes: its heartbeat loop waits for the held one
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))

	// The first heartbeat goes out and is held.
	require.Eventually(t, func() bool {
		clock.Advance(beat)
		return tr.sent.Load() >= 1
	}, 10*time.Second, 5*time.Millisecond, "no heartbeat was sent")
	// The next ticks send more, which the server answers, while the first
	// is still held.
	require.Eventually(t, func() bool {
		clock.Advance(beat)
		return tr.answered.Load() >= 2
	}, 10*time.Second, 5*time.Millisecond, "the heartbeats after a held one were not sent")
	assert.Equal(t, "ready", cl.Endpoints()[0].State)

	// Once it arrives it is answered too, and nothing was lost.
	release()
	require.Eventually(t, func() bool { return tr.answered.Load() >= 3 }, 10*time.Second, 5*time.Millisecond)
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)
	assert.Len(t, srv.Server.Sessions(), 1)
}
