package framework_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// eventTransport records the requests a client sends and the moments it
// drops its pooled connections, in order.
type eventTransport struct {
	inner *http.Transport
	mu    sync.Mutex
	log   []string
}

func (t *eventTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.inner.RoundTrip(r)
	t.mu.Lock()
	t.log = append(t.log, r.Method+" "+r.URL.Path)
	t.mu.Unlock()
	return resp, err
}

func (t *eventTransport) CloseIdleConnections() {
	t.mu.Lock()
	t.log = append(t.log, "close-idle")
	t.mu.Unlock()
	t.inner.CloseIdleConnections()
}

func (t *eventTransport) events() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.log...)
}

// A server replaced by another process at the same address leaves the
// client with pooled connections that lead to the old one. Written into as
// the old process exits, a call fails with no way to know whether it was
// read, so the client drops its pool once the new instance agrees a
// session, before its first call there.
func TestRestartAtTheSameAddressDropsPooledConnectionsBeforeTheFirstCall(t *testing.T) {
	old := startBench(t, "127.0.0.1:0", "1.0.0")
	tr := &eventTransport{inner: framework.NewTransport(nil)}
	cl := benchClient(t, "1.0.0", []string{old.URL}, func(c *framework.ClientConfig) { c.Transport = tr })
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)

	require.NoError(t, old.Stop())
	replacement := startBench(t, old.Addr, "1.0.0")
	mark := len(tr.events())
	_, err = report(timeout(t, 15*time.Second), cl, 2)
	require.NoError(t, err)
	require.Equal(t, int64(1), replacement.handled.Load())

	// After the handshake with the replacement, the pool is dropped before
	// the call is sent.
	after := tr.events()[mark:]
	handshake, call := -1, -1
	for i, ev := range after {
		switch {
		case strings.HasSuffix(ev, "/lockstep/handshake"):
			handshake = i
		case strings.HasSuffix(ev, "/ReportStatus") && call < 0:
			call = i
		}
	}
	require.GreaterOrEqual(t, handshake, 0, "no handshake with the replacement: %v", after)
	require.Greater(t, call, handshake, "events: %v", after)
	assert.Contains(t, after[handshake:call], "close-idle", "the call went out on the old pool: %v", after)
}

// A replica that drains does not cost the client its pooled connections
// to the other replicas: the draining one answers every request on its
// pooled connections (not processed), so the client does not drop the
// transport's idle connections, which Go's transport can only drop for
// every endpoint at once.
func TestADrainingReplicaLeavesThePoolToTheOthers(t *testing.T) {
	a := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) { c.DrainQuiet = 20 * time.Millisecond })
	b := startBench(t, "127.0.0.1:0", "1.0.0")
	tr := &eventTransport{inner: framework.NewTransport(nil)}
	cl := benchClient(t, "1.0.0", []string{a.URL, b.URL}, func(c *framework.ClientConfig) { c.Transport = tr })
	require.Eventually(t, func() bool {
		ready := 0
		for _, ep := range cl.Endpoints() {
			if ep.State == "ready" {
				ready++
			}
		}
		return ready == 2
	}, 10*time.Second, time.Millisecond, "sessions with both replicas")
	mark := len(tr.events())

	require.NoError(t, a.Server.Shutdown(timeout(t, 20*time.Second)), "a drains once the client has closed its session")
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), b.handled.Load(), "the call went to the other replica")
	assert.NotContains(t, tr.events()[mark:], "close-idle", "the client dropped its pool for a draining replica")
}
