package framework_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// A refusal the server cannot hold open, and a welcome the client rejects
// by its own rules, are retried with backoff, not in a hot loop.
func TestRefusalsTheServerCannotHoldAreRetriedWithBackoff(t *testing.T) {
	const attempts = 10
	var mu sync.Mutex
	var joinedAt []time.Time
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.OnPeerJoined = func(framework.SessionInfo) {
			mu.Lock()
			defer mu.Unlock()
			joinedAt = append(joinedAt, time.Now())
		}
	})
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.PeerRelease = ">= 2.0" })
	// Wait for ten attempts (each opens a session the client then rejects),
	// then check how long they took: the backoff (5ms growing by 1.6 to
	// 100ms, ±20 %) spaces nine gaps by at least 330ms, where the hot loop
	// opened thousands of sessions a second. Load only makes them slower.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(joinedAt) >= attempts
	}, 20*time.Second, 5*time.Millisecond, "ten attempts")
	mu.Lock()
	took := joinedAt[attempts-1].Sub(joinedAt[0])
	mu.Unlock()
	assert.Greater(t, took, 250*time.Millisecond, "%d attempts in %v", attempts, took)
	assert.Contains(t, cl.Ready().Error(), "release")
}
