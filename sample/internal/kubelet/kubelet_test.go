package kubelet_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// counting counts a transport's heartbeat requests and records the paths
// of all others. Each request is counted in one place only: two counters
// read one after the other while a request is between them disagree.
type counting struct {
	next       http.RoundTripper
	heartbeats atomic.Int64
	mu         sync.Mutex
	others     []string
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, protocol.PathHeartbeat) {
		c.heartbeats.Add(1)
	} else {
		c.mu.Lock()
		c.others = append(c.others, r.URL.Path)
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

// othersSince returns the paths of the requests other than heartbeats
// from the nth on.
func (c *counting) othersSince(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.others[n:])
}

// The nodes of one kubelet have a session each, and share one transport
// and one heartbeat sender: an idle kubelet sends one heartbeat request per
// interval for all its nodes.
func TestNodesShareTransportAndHeartbeats(t *testing.T) {
	const nodes = 40
	const heartbeat = 50 * time.Millisecond
	// The sessions outlive any stall of a loaded machine (SessionTTL a
	// minute): a session that lapsed would add handshakes and watches to
	// the requests this test counts.
	n, err := nodecontroller.New(nodecontroller.Config{API: "v2", ResyncAfter: time.Minute, Logger: frameworktest.Quiet(),
		Server: framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: time.Minute, Heartbeat: heartbeat, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = n.Server().Serve(l) }()
	t.Cleanup(func() { _ = n.Server().Close() })

	tr := &counting{next: framework.NewTransport(nil)}
	k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: nodes, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{"http://" + l.Addr().String()},
			Transport: tr, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; k.Close() })

	// Each node reports its status once and watches its pod assignments;
	// no pod is assigned, so none is reported. The bound only stops a
	// stuck kubelet: under the race detector on a loaded 2-core machine
	// forty nodes' handshakes, reports and watches took more than 10 s.
	require.Eventually(t, func() bool {
		return k.Ready() == nil && k.Stats().StatusReports.Load() == nodes && k.Synced()
	}, 30*time.Second, 10*time.Millisecond)
	assert.Zero(t, k.Stats().PodReports.Load())
	assert.Len(t, n.Health(), nodes)
	assert.Equal(t, map[string]int{"2.0.0": nodes}, n.Server().Status().PeersByVersion["nodestatus"], "one session per node")

	// Idle now: only heartbeats travel, one request per interval for all.
	// Wait for ten heartbeat requests: one per node per interval would send
	// them within a quarter of an interval; one per interval for all takes
	// at least nine intervals (load only makes that longer).
	const want = 10
	before := len(tr.othersSince(0))
	beats, start := tr.heartbeats.Load(), time.Now()
	require.Eventually(t, func() bool { return tr.heartbeats.Load()-beats >= want }, 20*time.Second, 5*time.Millisecond)
	took := time.Since(start)
	hb := tr.heartbeats.Load() - beats
	assert.Empty(t, tr.othersSince(before), "an idle kubelet sends nothing but heartbeats")
	assert.GreaterOrEqual(t, took, 5*heartbeat, "%d heartbeat requests in %v: about one per interval for %d nodes, not one per node", hb, took, nodes)
	assert.GreaterOrEqual(t, hb, int64(want))
	assert.Equal(t, map[string]int{"2.0.0": nodes}, n.Server().Status().PeersByVersion["nodestatus"], "and every session lives")
}

func TestConfigMistakes(t *testing.T) {
	_, err := kubelet.New(kubelet.Config{API: "v3"})
	assert.ErrorContains(t, err, `API "v3"`)
	_, err = kubelet.New(kubelet.Config{API: "v1", Fork: true})
	assert.ErrorContains(t, err, "fork mode needs API v2")
}
