package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/benchkit/selectrun"
)

// TestSelectedWatchAtScale is the selector benchmark's shape, small enough
// for every test run: 500 watchers over 5 clients, each selecting its own
// node of a topic of 5,000 pods (10 per node), 1,000 changes of distinct
// pods of which every tenth rebinds its pod to the next node. Every
// watcher's snapshot is exactly its node's 10 pods, every event it sees is
// one the changes call for, in order (an update, or a delete on the old
// node and an add on the new), and its cache ends as its share. No timing
// is asserted.
func TestSelectedWatchAtScale(t *testing.T) {
	// Parallel: selectrun.Run starts a server and clients of its own, and
	// the test asserts what they delivered, not how fast.
	t.Parallel()
	if testing.Short() {
		t.Skip("500 watch streams")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := selectrun.Run(ctx, selectrun.Config{Watchers: 500, Objects: 5000, Clients: 5,
		Rate: 2000, Changes: 1000, RebindEvery: 10, Check: true})
	require.NoError(t, err)
	require.Equal(t, 10, res.SnapshotMin)
	require.Equal(t, 10, res.SnapshotMax)
	require.NoError(t, res.Verify())
	t.Logf("setup %v, %d deliveries, p99 %v (not asserted)", res.Setup, res.Deliveries, res.Percentile(0.99))
}
