package nodecontroller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A node's grace period runs on while a replica holds a session of its
// kubelet, and for a grace period after the last one lost it; a session
// whose node no replica knows yet (a new kubelet's, before its first
// report) may be the node's, so it holds the grace period open until it
// has been held for a grace period itself.
func TestLivenessGraceLeft(t *testing.T) {
	const grace = 3 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLiveness()
	assert.Zero(t, l.graceLeft("node-000", grace, t0), "never heard")
	l.learn("node-000.old", "node-000")
	l.hold("node-000.old", "a", t0)
	l.hold("node-000.old", "b", t0)
	l.release("node-000.old", "a", t0.Add(time.Second))
	assert.Equal(t, grace, l.graceLeft("node-000", grace, t0.Add(10*time.Second)), "b hears it")
	l.release("node-000.old", "b", t0.Add(2*time.Second))
	assert.Equal(t, time.Second, l.graceLeft("node-000", grace, t0.Add(4*time.Second)), "a grace period after b lost it")
	assert.Equal(t, -time.Second, l.graceLeft("node-000", grace, t0.Add(6*time.Second)))

	// A new kubelet's session, its node not yet reported.
	l.hold("node-000.new", "c", t0.Add(5*time.Second))
	assert.Equal(t, 2*time.Second, l.graceLeft("node-000", grace, t0.Add(6*time.Second)))
	assert.Equal(t, -time.Second, l.graceLeft("node-000", grace, t0.Add(9*time.Second)), "held for a grace period and still unknown")
	l.learn("node-000.new", "node-000")
	assert.Equal(t, grace, l.graceLeft("node-000", grace, t0.Add(9*time.Second)))
	l.leave("c", t0.Add(10*time.Second))
	assert.Equal(t, 2*time.Second, l.graceLeft("node-000", grace, t0.Add(11*time.Second)), "c stopped")
}
