package framework_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/framework"
)

// A refusal the server cannot hold open, and a welcome the client rejects
// by its own rules, are retried with backoff, not in a hot loop.
func TestRefusalsTheServerCannotHoldAreRetriedWithBackoff(t *testing.T) {
	var joined atomic.Int64
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.OnPeerJoined = func(framework.SessionInfo) { joined.Add(1) }
	})
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.PeerRelease = ">= 2.0" })
	time.Sleep(time.Second) // a second of real backoff, to count the attempts made in it
	// The backoff tops out at 100ms: about ten attempts a second, where the
	// hot loop opened thousands of sessions.
	assert.Less(t, joined.Load(), int64(40), "sessions opened in a second")
	assert.Positive(t, joined.Load())
	assert.Contains(t, cl.Ready().Error(), "release")
}
