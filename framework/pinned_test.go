package framework_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// TestPinnedPeerCarriesAFailFastCallBeforeItsLoopRuns: a pinned peer has
// no handshake, so its client routes calls to it from the moment the
// client is made, however late the endpoint's loop first runs. A FailFast
// call made at once (a scheduler calling a Kubernetes extender) gets the
// peer's own answer, here the 404 of an extender without the verb, never
// unavailable for want of a ready endpoint.
func TestPinnedPeerCarriesAFailFastCallBeforeItsLoopRuns(t *testing.T) {
	var hits atomic.Int64
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("null\n"))
	}))
	t.Cleanup(ext.Close)
	cfg := framework.ClientConfig{Component: "scheduler", Release: "1.30.0",
		Pinned: []framework.PinnedPeer{{URL: ext.URL + "/ext", Version: "1.0.0"}}}
	release := framework.HoldPinnedLoops(&cfg)
	defer release()
	cl := frameworktest.NewClient(t, plainV1, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	eps := cl.Endpoints()
	require.Len(t, eps, 1)
	assert.Equal(t, "ready", eps[0].State, "routable before its loop runs")
	assert.NoError(t, cl.Ready())
	_, err := framework.CallUnary[StatusV1, AckV1](ctx, cl, "Report", &StatusV1{Node: "n1", Ready: true}, framework.FailFast())
	require.Error(t, err)
	assert.NotEqual(t, framework.CodeUnavailable, framework.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "HTTP 404")
	assert.Equal(t, int64(1), hits.Load(), "the peer had the call")

	release() // the loop may run from now on: the endpoint stays as it was
	_, err = framework.CallUnary[StatusV1, AckV1](ctx, cl, "Report", &StatusV1{Node: "n1", Ready: true}, framework.FailFast())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 404")
	assert.Equal(t, int64(2), hits.Load())
	assert.Equal(t, "ready", cl.Endpoints()[0].State)
}
