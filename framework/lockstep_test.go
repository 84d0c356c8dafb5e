package framework_test

import (
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
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

func TestSameVersionCallsSucceed(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	ctx := timeout(t, 10*time.Second)
	for i := 1; i <= 5; i++ {
		ack, err := report(ctx, cl, i)
		require.NoError(t, err)
		assert.True(t, ack.Accepted)
		assert.Equal(t, int64(i), ack.Generation)
	}
	assert.Equal(t, int64(5), srv.handled.Load())
}

func TestCallBlocksUntilCompatibleServerReplacesIncompatibleOne(t *testing.T) {
	old := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "2.0.0", []string{old.URL})

	// FailFast sees the incompatibility and explains it.
	_, err := report(timeout(t, 5*time.Second), cl, 1, framework.FailFast())
	require.Error(t, err)
	assert.Eventually(t, func() bool {
		_, err = report(timeout(t, 5*time.Second), cl, 1, framework.FailFast())
		return framework.CodeOf(err) == framework.CodeIncompatiblePeer
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, err.Error(), "nodecontroller speaks bench 1.0.0; kubelet offers 2.0.0: upgrade nodecontroller or run kubelet with fork mode")

	done := make(chan error, 1)
	var ack *benchmsg.Ack
	go func() {
		var err error
		ack, err = report(timeout(t, 20*time.Second), cl, 1)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("call against an incompatible server returned instead of blocking: %v", err)
	case <-time.After(300 * time.Millisecond):
	}

	require.NoError(t, old.Stop())
	replacement := startBench(t, old.Addr, "2.0.0")
	select {
	case err := <-done:
		require.NoError(t, err)
		assert.Equal(t, int64(1), ack.Generation)
	case <-time.After(15 * time.Second):
		t.Fatal("blocked call did not complete after a compatible server replaced the incompatible one")
	}
	assert.Equal(t, int64(0), old.handled.Load(), "the incompatible server processed a call")
	assert.Equal(t, int64(1), replacement.handled.Load())
}

func TestNoCallIsProcessedByAnIncompatiblePeer(t *testing.T) {
	v1 := startBench(t, "127.0.0.1:0", "1.0.0")
	v1.hold = make(chan struct{})
	cl := benchClient(t, "1.0.0", []string{v1.URL})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))

	const calls = 40
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := report(timeout(t, 30*time.Second), cl, i); err != nil {
				failed.Add(1)
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	// Let some calls reach the v1 handler, then replace v1 by v2 in place
	// while they are in flight; release the held calls as the drain starts.
	require.Eventually(t, func() bool { return v1.entered.Load() >= 5 }, 15*time.Second, time.Millisecond,
		"calls reach the v1 handler and wait there")
	stopped := make(chan error, 1)
	go func() { stopped <- v1.Stop() }()
	require.Eventually(t, v1.Server.Draining, 5*time.Second, time.Millisecond)
	close(v1.hold)
	require.NoError(t, <-stopped)

	v2 := startBench(t, v1.Addr, "2.0.0")
	time.Sleep(500 * time.Millisecond) // v1 calls still pending keep retrying against v2 here
	assert.Equal(t, int64(0), v2.handled.Load(), "the 2.0.0 handler ran a 1.0.0 client's call")
	require.NoError(t, v2.Stop())

	// A compatible server comes back: every pending call completes there.
	v1b := startBench(t, v1.Addr, "1.0.0")
	wg.Wait()
	assert.Equal(t, int64(0), failed.Load())
	assert.Equal(t, int64(calls), v1.handled.Load()+v1b.handled.Load(), "every call processed exactly once, by a 1.0.0 server")
	assert.Positive(t, v1.handled.Load(), "no call was in flight at the replacement")
}

func TestSameVersionDifferentFingerprintIsRefusedNamingBoth(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	model := benchmsg.Contract("1.0.0")
	model.Methods["Extra"] = model.Methods["ReportStatus"] // a change without a version bump
	changed, err := framework.NewContract(model)
	require.NoError(t, err)
	cl := frameworktest.NewClient(t, changed, framework.ClientConfig{
		Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}})

	var callErr error
	require.Eventually(t, func() bool {
		_, callErr = framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 5*time.Second), cl,
			"ReportStatus", benchmsg.Node(1), framework.FailFast())
		return framework.CodeOf(callErr) == framework.CodeIncompatiblePeer
	}, 5*time.Second, 10*time.Millisecond)
	msg := callErr.Error()
	assert.Contains(t, msg, "fingerprint")
	assert.Contains(t, msg, benchContract(t, "1.0.0").Fingerprint())
	assert.Contains(t, msg, changed.Fingerprint())
	assert.Equal(t, int64(0), srv.handled.Load())
}

func TestRoutingSkipsIncompatibleEndpoints(t *testing.T) {
	a := startBench(t, "127.0.0.1:0", "1.0.0")
	b := startBench(t, "127.0.0.1:0", "1.0.0")
	c := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "1.0.0", []string{a.URL, b.URL, c.URL})
	ctx := timeout(t, 20*time.Second)
	require.Eventually(t, func() bool { return readyCount(cl) == 3 }, 15*time.Second, 5*time.Millisecond)

	// Replace c by an incompatible version while calls flow.
	var failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := report(ctx, cl, i); err != nil {
					failed.Add(1)
					t.Errorf("call failed: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, c.Stop())
	c2 := startBench(t, c.Addr, "2.0.0")
	require.Eventually(t, func() bool { return endpointState(cl, c.URL) == "refused" }, 15*time.Second, 5*time.Millisecond)
	before := a.handled.Load() + b.handled.Load()
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	assert.Zero(t, failed.Load())
	assert.Greater(t, a.handled.Load()+b.handled.Load(), before, "calls kept flowing to the compatible endpoints")
	assert.Zero(t, c2.handled.Load(), "the incompatible endpoint processed a call")

	// All three incompatible: calls block, then succeed on the first that
	// becomes compatible.
	require.NoError(t, a.Stop())
	a2 := startBench(t, a.Addr, "2.0.0")
	require.NoError(t, b.Stop())
	b2 := startBench(t, b.Addr, "2.0.0")
	require.Eventually(t, func() bool { return readyCount(cl) == 0 }, 15*time.Second, 5*time.Millisecond)
	done := make(chan error, 1)
	go func() { _, err := report(ctx, cl, 99); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("call returned while every endpoint was incompatible: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, b2.Stop())
	b3 := startBench(t, b.Addr, "1.0.0")
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), b3.handled.Load())
	assert.Zero(t, a2.handled.Load()+c2.handled.Load()+b2.handled.Load())
}

func TestDrainCompletesInFlightCallsAndClientsMoveWithoutFailures(t *testing.T) {
	a := startBench(t, "127.0.0.1:0", "1.0.0")
	b := startBench(t, "127.0.0.1:0", "1.0.0")
	a.hold = make(chan struct{})
	cl := benchClient(t, "1.0.0", []string{a.URL, b.URL})
	require.Eventually(t, func() bool { return readyCount(cl) == 2 }, 15*time.Second, 5*time.Millisecond)

	ctx := timeout(t, 20*time.Second)
	var failed, ok atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := report(ctx, cl, i); err != nil {
				failed.Add(1)
				t.Errorf("call %d: %v", i, err)
				return
			}
			ok.Add(1)
		}()
		if i == 20 {
			// Some calls now wait inside a's handler; drain a.
			go func() {
				require.Eventually(t, func() bool { return cl.Ready() == nil }, time.Second, time.Millisecond)
				go func() { _ = a.Stop() }()
				require.Eventually(t, a.Server.Draining, 5*time.Second, time.Millisecond)
				close(a.hold)
			}()
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	assert.Zero(t, failed.Load())
	assert.Equal(t, int64(200), ok.Load())
	assert.Equal(t, int64(200), a.handled.Load()+b.handled.Load())
	assert.Positive(t, a.handled.Load(), "a had calls in flight when it drained")
	assert.Equal(t, "draining", endpointStateEventually(t, cl, a.URL, "draining", "unreachable", "connecting"))
}

func TestTLS(t *testing.T) {
	certs := frameworktest.NewTLS(t, "kubelet")
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) { c.TLSConfig = certs.Server })
	require.True(t, strings.HasPrefix(srv.URL, "https://"))
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.TLSConfig = certs.Client })
	ack, err := report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	assert.True(t, ack.Accepted)

	// A client that does not trust the server's CA never gets a session.
	bad := benchClient(t, "1.0.0", []string{srv.URL})
	require.Eventually(t, func() bool {
		_, err = report(timeout(t, 5*time.Second), bad, 1, framework.FailFast())
		return err != nil && strings.Contains(err.Error(), "certificate")
	}, 10*time.Second, 10*time.Millisecond, "last error: %v", err)
	assert.Equal(t, framework.CodeUnavailable, framework.CodeOf(err))
}

func TestPlainHTTPRefusedOffLoopbackUnlessInsecure(t *testing.T) {
	_, err := framework.NewClient(benchContract(t, "1.0.0"), framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{"http://10.1.2.3:80"}})
	require.ErrorContains(t, err, "Insecure")
	cl, err := framework.NewClient(benchContract(t, "1.0.0"), framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{"http://[::1]:1"}, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	require.NoError(t, cl.Close())
}

func TestClientRejectsContractItIsNotTheClientOf(t *testing.T) {
	_, err := framework.NewClient(benchContract(t, "1.0.0"), framework.ClientConfig{
		Component: "scheduler", Release: "1.0.0", Endpoints: []string{"http://127.0.0.1:1"}})
	require.ErrorContains(t, err, "scheduler is not the client of bench")
}

func readyCount(cl *framework.Client) int {
	n := 0
	for _, e := range cl.Endpoints() {
		if e.State == "ready" {
			n++
		}
	}
	return n
}

func endpointState(cl *framework.Client, url string) string {
	for _, e := range cl.Endpoints() {
		if e.URL == url {
			return e.State
		}
	}
	return ""
}

// endpointStateEventually waits for an endpoint to reach one of states and
// returns the first of states if it did, its last state if not.
func endpointStateEventually(t *testing.T, cl *framework.Client, url string, states ...string) string {
	t.Helper()
	reached := func() bool { return slices.Contains(states, endpointState(cl, url)) }
	if !assert.Eventually(t, reached, 5*time.Second, 5*time.Millisecond, "endpoint %s never %q", url, states) {
		return endpointState(cl, url)
	}
	return states[0]
}

var _ = http.StatusOK
