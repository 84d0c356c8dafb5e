package framework_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// TestIdleWatchPingsEveryHalfTTL: an idle stream gets a ping every half
// session TTL, as docs/topics.md promises, not every other half (a ping
// must not count as the stream having written something). On the fake
// clock: after one ping, advancing half a TTL brings the next.
func TestIdleWatchPingsEveryHalfTTL(t *testing.T) {
	const ttl = 2 * time.Second
	fc := clockwork.NewFakeClock()
	// The server drains on its clock when the test ends: the clock moves on
	// its own from then until the server has stopped (cleanups run last
	// registered first).
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) })
	srv := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{cfg: func(c *framework.ServerConfig) {
		c.Clock, c.SessionTTL = fc, ttl
	}})
	t.Cleanup(func() { go runClock(fc, stopped) })
	c := topicContract(t, "1.0.0")
	token := rawHandshake(t, srv.URL, c, "pinged")
	req, err := http.NewRequest(http.MethodGet, srv.URL+protocol.WatchPath(c.Name(), c.Version(), topicmsg.TopicNodeHealth), nil)
	require.NoError(t, err)
	req.Header.Set(protocol.HeaderSession, token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the stream ended")
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no frame within 10s")
			return ""
		}
	}
	require.Contains(t, next(), `"type":"synced"`)
	// The stream counts what it wrote just after writing it; the clock moves
	// only once it has, or the first tick could take synced for the next
	// interval's write and skip a ping.
	require.Eventually(t, func() bool {
		st := srv.stats(t, topicmsg.TopicNodeHealth)
		return len(st.Watchers) == 1 && st.Watchers[0].Frames >= 1
	}, 10*time.Second, 5*time.Millisecond, "the synced frame is counted")
	renew := func() {
		hb, err := http.NewRequest(http.MethodPost, srv.URL+protocol.PathHeartbeat, nil)
		require.NoError(t, err)
		hb.Header.Set(protocol.HeaderSession, token)
		r, err := http.DefaultClient.Do(hb)
		require.NoError(t, err)
		r.Body.Close()
	}
	// The first ping: the stream wrote synced, so it may take two ticks.
	// Advance half a TTL at a time (renewing the session) until it comes.
	got := make(chan string, 1)
	require.Eventually(t, func() bool {
		select {
		case l := <-lines:
			got <- l
			return true
		default:
		}
		fc.Advance(ttl / 2)
		renew()
		return false
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, `{"type":"ping"}`, strings.TrimSpace(<-got))
	// Every further half TTL brings one more ping.
	for range 3 {
		fc.Advance(ttl / 2)
		renew()
		require.Equal(t, `{"type":"ping"}`, next(), "a ping after half a TTL of silence")
	}
}

// runClock moves a fake clock on by a second every millisecond until done
// closes, for a server to shut down on it.
func runClock(fc *clockwork.FakeClock, done <-chan struct{}) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			fc.Advance(time.Second)
		}
	}
}
