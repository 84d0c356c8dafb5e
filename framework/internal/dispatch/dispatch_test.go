package dispatch

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/replay"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
)

func testServer(t *testing.T) *Server {
	t.Helper()
	cfg := limits.Config{}
	require.NoError(t, cfg.Fill(100))
	return &Server{
		Replays: replay.New(time.Minute, 16, replay.DefaultMaxBytes), Now: time.Now,
		Peers: limits.NewPeers(cfg, 100, nil), MaxInFlight: 4,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func TestRunBoundedRunsEachIndexOnceOnAtMostWorkers(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	var running, most atomic.Int64
	runBounded(100, 3, func(i int) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
	})
	require.Len(t, seen, 100)
	for i, n := range seen {
		assert.Equal(t, 1, n, "index %d", i)
	}
	assert.LessOrEqual(t, most.Load(), int64(3))
}

// TestRunBoundedBlockedCallsHoldUpOnlyTheirWorkers blocks the first calls
// until every other call has run: with a worker left over, the others
// must run all the same, and none of them twice.
func TestRunBoundedBlockedCallsHoldUpOnlyTheirWorkers(t *testing.T) {
	const n, workers, blocked = 40, 4, 3
	var others sync.WaitGroup
	others.Add(n - blocked)
	var runs [n]atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		runBounded(n, workers, func(i int) {
			runs[i].Add(1)
			if i < blocked {
				others.Wait()
				return
			}
			others.Done()
		})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("calls behind the blocked ones never ran")
	}
	for i := range runs {
		assert.Equal(t, int32(1), runs[i].Load(), "index %d", i)
	}
}

func TestItemsServesEachItemWithItsOwnHeaders(t *testing.T) {
	d := testServer(t)
	header := http.Header{"Traceparent": {"call"}}
	body := []byte(`{"items":[1,2],"headers":[{},{"traceparent":"item"}]}`)
	out, err := d.Items(context.Background(), header, body, 10, func(_ context.Context, i int, raw json.RawMessage, h http.Header) ([]byte, error) {
		if i == 1 {
			return nil, apierror.Errorf(apierror.CodeConflict, "%s %s", raw, h.Get("Traceparent"))
		}
		return []byte(`"` + h.Get("Traceparent") + `"`), nil
	})
	require.NoError(t, err)
	var res wire.BatchResponse
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res.Results, 2)
	assert.JSONEq(t, `"call"`, string(res.Results[0].OK))
	require.NotNil(t, res.Results[1].Error)
	assert.Equal(t, "2 item", res.Results[1].Error.Message)
	assert.Equal(t, "call", header.Get("Traceparent"), "the call's headers stay as they were")

	_, err = d.Items(context.Background(), header, []byte(`{"items":[1,2,3]}`), 2, nil)
	assert.Equal(t, apierror.CodeInvalidArgument, apierror.CodeOf(err))
	_, err = d.Items(context.Background(), header, []byte(`{"items":[1,2],"headers":[{}]}`), 2, nil)
	assert.ErrorContains(t, err, "one per item: 1 for 2 items")
}

func TestOnceAnswersAReplayFromTheRecordOnADetachedContext(t *testing.T) {
	d := testServer(t)
	k := replay.Key{Contract: "c", Peer: "p", Instance: "i", Key: "k"}
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	out, replayed, err := d.Once(ctx, k, "M", []byte(`{}`), func(hctx context.Context) ([]byte, error) {
		runs++
		cancel()
		return []byte(`1`), hctx.Err()
	})
	require.NoError(t, err, "the request's cancellation does not reach the handler")
	assert.False(t, replayed)
	assert.Equal(t, `1`, string(out))

	out, replayed, err = d.Once(context.Background(), k, "M", []byte(`{}`), func(context.Context) ([]byte, error) {
		runs++
		return []byte(`2`), nil
	})
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, `1`, string(out))
	assert.Equal(t, 1, runs)
}

func TestMultiAnswersEachCallAndSurvivesAPanic(t *testing.T) {
	d := testServer(t)
	var inFlight atomic.Int64
	usage := d.Peers.Usage("p")
	m := Multi[string]{Server: d, Contract: "c", Version: "1.0.0", Header: http.Header{}, InFlight: &inFlight, Usage: usage,
		Method: func(name string) (string, bool) { return name, name != "Missing" },
		Call: func(_ context.Context, mh, name string, _ http.Header, body []byte) ([]byte, bool, error) {
			if name == "Panics" {
				panic("boom")
			}
			return body, false, nil
		},
	}
	out, err := m.Serve(context.Background(), []byte(`{"calls":[{"method":"Echo","request":1},{"method":"Panics","request":2},{"method":"Missing","request":3}]}`))
	require.NoError(t, err)
	var res wire.BatchResponse
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res.Results, 3)
	assert.JSONEq(t, `1`, string(res.Results[0].OK))
	assert.Equal(t, apierror.CodeInternal, res.Results[1].Error.Code)
	assert.Equal(t, apierror.CodeNotFound, res.Results[2].Error.Code)
	assert.Zero(t, inFlight.Load(), "the calls are counted out once answered")

	inFlight.Store(2) // the request itself and another call: 2 + 3 - 1 > 4
	_, err = m.Serve(context.Background(), []byte(`{"calls":[{"method":"Echo","request":1},{"method":"Echo","request":1},{"method":"Echo","request":1},{"method":"Echo","request":1}]}`))
	assert.Equal(t, apierror.CodeResourceExhausted, apierror.CodeOf(err))
	assert.Equal(t, int64(2), inFlight.Load(), "a refused multi-call counts nothing")
}
