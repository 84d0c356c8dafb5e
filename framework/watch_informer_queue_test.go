package framework_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
)

// TestInformerTakesEachKeysLatestFrameWhenItGetsToIt: an informer works
// through its changed keys one at a time, each with the frame that is
// latest when it gets to it. While a handler holds key a, key b, queued
// behind it, changes again: b's first change is never decoded nor
// handed to the handlers, only its latest, as fresh as the informer's
// pace allows.
func TestInformerTakesEachKeysLatestFrameWhenItGetsToIt(t *testing.T) {
	writer, cl := startNodeStatusKeys(t, "latest", 3)
	x, a, b := "node-000", "node-001", "node-002"
	ctx := timeout(t, 20*time.Second)
	holdX, holdA := make(chan struct{}), make(chan struct{})
	inX, inA := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string
	inf, err := framework.Watch(ctx, cl, "NodeStatus", framework.InformerHandlers[benchgen.NodeStatus]{
		OnUpdate: func(key string, _, obj *benchgen.NodeStatus) {
			mu.Lock()
			seen = append(seen, key+"@"+obj.Capacity["cpu"])
			mu.Unlock()
			switch key + "@" + obj.Capacity["cpu"] {
			case x + "@1":
				close(inX)
				<-holdX
			case a + "@1":
				close(inA)
				<-holdA
			}
		},
	}, framework.DecodeEach())
	require.NoError(t, err)
	defer inf.Stop()
	require.NoError(t, inf.WaitForSync(ctx))

	require.NoError(t, writer.Set(nodeOfGeneration(0, 1)))
	<-inX
	// a and b wait behind x, in that order.
	require.NoError(t, writer.Set(nodeOfGeneration(1, 1)))
	require.NoError(t, writer.Set(nodeOfGeneration(2, 1)))
	require.Eventually(t, func() bool { return inf.Stats().Queued == 2 }, 15*time.Second, time.Millisecond)
	close(holdX)
	<-inA
	// b changes again while a's handler runs: its queued frame is replaced.
	coalesced := inf.Stats().Coalesced
	require.NoError(t, writer.Set(nodeOfGeneration(2, 2)))
	require.Eventually(t, func() bool { return inf.Stats().Coalesced > coalesced }, 15*time.Second, time.Millisecond,
		"b's second change replaces its first, still queued")
	close(holdA)
	require.Eventually(t, func() bool {
		o, ok := inf.Get(b)
		return ok && o.Capacity["cpu"] == "2"
	}, 15*time.Second, time.Millisecond)
	// The handler is called after the cache changes: its call for b's
	// latest frame is waited for, not read as soon as the cache holds it.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 3
	}, 15*time.Second, time.Millisecond, "the handler was called for b's latest frame")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{x + "@1", a + "@1", b + "@2"}, seen, fmt.Sprintf("handlers saw %q", seen))
}
