package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/discovery"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// receive returns the next value of ch, failing after 10 s.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no report")
	}
	var zero T
	return zero
}

// runManual runs m's RunReadiness, or its Run, until the test ends. Each
// call of next returns the source's next report; the source waits inside
// the update that reported it until next is called again, so what the test
// changes in between comes after that report.
func runManual[T any](t *testing.T, run func(ctx context.Context, update func(T))) (next func() T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reports, taken := make(chan T), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, func(r T) {
			select {
			case reports <- r:
			case <-ctx.Done():
				return
			}
			select {
			case <-taken:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	first := true
	return func() T {
		t.Helper()
		if !first {
			taken <- struct{}{}
		}
		first = false
		return receive(t, reports)
	}
}

// A manual source reports its endpoints with their readiness, one report
// per URL (ready if any says so), and every change after. An endpoint that
// went not ready and ready again while its client had not yet taken the
// last report in is reported not ready, then ready, so the client still
// hears it came back.
func TestManualReportsEveryReturn(t *testing.T) {
	const a, b = "http://127.0.0.1:1", "http://127.0.0.1:2"
	m := discovery.NewManual(framework.EndpointReport{URL: b, NotReady: true}, framework.EndpointReport{URL: a},
		framework.EndpointReport{URL: b})
	next := runManual(t, m.RunReadiness)
	assert.Equal(t, []framework.EndpointReport{{URL: a}, {URL: b}}, next())
	// The source waits in its first update: both changes come before it
	// reports again.
	assert.False(t, m.SetReady("http://127.0.0.1:3", true), "an unknown endpoint")
	require.True(t, m.SetReady(a, false))
	require.True(t, m.SetReady(a, true))
	assert.Equal(t, []framework.EndpointReport{{URL: a, NotReady: true}, {URL: b}}, next(),
		"the return of a was not reported")
	assert.Equal(t, []framework.EndpointReport{{URL: a}, {URL: b}}, next())

	require.True(t, m.SetReady(b, false))
	assert.Equal(t, []framework.EndpointReport{{URL: a}, {URL: b, NotReady: true}}, next())
	m.Set(framework.EndpointReport{URL: b})
	assert.Equal(t, []framework.EndpointReport{{URL: b}}, next())
	assert.Equal(t, []framework.EndpointReport{{URL: b}}, m.Endpoints())
}

// Run, for a client that does not take readiness, reports the URLs, ready
// or not, and reports again only when they change.
func TestManualRunReportsURLsOnly(t *testing.T) {
	const a, b = "http://127.0.0.1:1", "http://127.0.0.1:2"
	m := discovery.NewManual(framework.EndpointReport{URL: a, NotReady: true})
	next := runManual(t, m.Run)
	assert.Equal(t, []string{a}, next())
	require.True(t, m.SetReady(a, true))
	m.Set(framework.EndpointReport{URL: a}, framework.EndpointReport{URL: b})
	assert.Equal(t, []string{a, b}, next(), "a change of readiness alone was reported")
}

// A client of a manual source, calling a server that is stopped and
// replaced at its address on 127.0.0.1: the source says the endpoint is
// not ready, then ready again once the new server listens, and the call
// made while it was gone goes through to the new server.
func TestClientFollowsAManualSourceThroughARestart(t *testing.T) {
	contract, err := framework.NewContract(benchmsg.Contract("1.0.0"))
	require.NoError(t, err)
	old := startReplica(t, contract, "127.0.0.1:0")
	url := "http://" + old.Addr
	m := discovery.NewManual(framework.EndpointReport{URL: url})
	cl := frameworktest.NewClient(t, contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Source: m})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := func() error {
		_, err := framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](ctx, cl, "ReportStatus", benchmsg.Node(1))
		return err
	}
	require.NoError(t, call())

	require.NoError(t, old.Stop())
	require.True(t, m.SetReady(url, false))
	require.Eventually(t, func() bool { return cl.Ready() != nil }, 10*time.Second, time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- call() }()
	require.Eventually(t, func() bool { return cl.Status().Blocked == 1 }, 10*time.Second, time.Millisecond)
	replacement := startReplica(t, contract, old.Addr)
	require.True(t, m.SetReady(url, true))
	require.NoError(t, receive(t, done))
	assert.Equal(t, int64(1), replacement.handled.Load())
}
