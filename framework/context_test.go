package framework_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// Calls follow Go's context conventions: a call that ends because its
// context did returns an error for which errors.Is(err, ctx.Err()) holds,
// coded deadline_exceeded or canceled and saying only that; what it waited
// for is the [framework.PeerState] beside it.

func TestBlockedCallEndsByItsDeadline(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "2.0.0", []string{srv.URL})
	require.Equal(t, "refused", endpointStateEventually(t, cl, srv.URL, "refused"))

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := report(ctx, cl, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, ctx.Err())
	assert.Equal(t, framework.CodeDeadlineExceeded, framework.CodeOf(err))
	var ps *framework.PeerState
	require.ErrorAs(t, err, &ps)
	assert.Contains(t, ps.Error(), srv.URL, "the error keeps which endpoint it waited for")
	assert.Zero(t, srv.entered.Load())
}

func TestBlockedCallEndsByCancel(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "2.0.0", []string{srv.URL})
	require.Equal(t, "refused", endpointStateEventually(t, cl, srv.URL, "refused"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := report(ctx, cl, 1)
		done <- err
	}()
	// The call is blocked once the status counts it.
	require.Eventually(t, func() bool { return cl.Status().Blocked == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	err := <-done
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, framework.CodeCanceled, framework.CodeOf(err))
	assert.Equal(t, 499, framework.CodeCanceled.HTTPStatus())
	assert.Zero(t, srv.entered.Load())
}

func TestFailFastRightAfterNewClientWaitsForTheFirstHandshake(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	ack, err := report(timeout(t, 5*time.Second), cl, 1, framework.FailFast())
	require.NoError(t, err, "FailFast waits for the first handshake round, which succeeds")
	assert.True(t, ack.Accepted)
}

func TestFailFastAgainstNoServerFailsAtOnceUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	// The client's clock stands still, so no retry's backoff ever ends:
	// only the first round of handshakes can end the call. Its context
	// has no deadline, so a call that waited for anything more would
	// never return.
	cl := benchClient(t, "1.0.0", []string{url}, func(c *framework.ClientConfig) { c.Clock = clockwork.NewFakeClock() })

	done := make(chan error, 1)
	go func() {
		_, err := report(context.Background(), cl, 1, framework.FailFast())
		done <- err
	}()
	select {
	case err = <-done:
	case <-timeout(t, 60*time.Second).Done():
		t.Fatal("FailFast against no server kept waiting after the first round")
	}
	require.Error(t, err)
	assert.Equal(t, framework.CodeUnavailable, framework.CodeOf(err), "%v", err)
	assert.Equal(t, "unreachable", endpointState(cl, url), "the call ended after the first round, which found nothing listening")
	assert.False(t, errors.Is(err, context.DeadlineExceeded))
}

func TestFailFastAgainstAnIncompatibleServerSaysSo(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "2.0.0", []string{srv.URL})
	_, err := report(timeout(t, 10*time.Second), cl, 1, framework.FailFast())
	require.Error(t, err)
	assert.Equal(t, framework.CodeIncompatiblePeer, framework.CodeOf(err), "%v", err)
	assert.Zero(t, srv.entered.Load())
}
