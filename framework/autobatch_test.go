package framework_test

import (
	"context"
	"net/http"
	"strconv"
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

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// echoServer answers each NodeStatus with the node's number as generation,
// so every caller can check it got its own answer, after holding the call
// for delay so that concurrent calls pile up.
func echoServer(t *testing.T, delay time.Duration, traces *sync.Map) *frameworktest.Running {
	return echoServerHeld(t, func() {
		time.Sleep(delay) // real time: a slow handler is what lets concurrent calls pile up into one request
	}, traces)
}

// echoServerHeld is echoServer holding each call with hold.
func echoServerHeld(t *testing.T, hold func(), traces *sync.Map) *frameworktest.Running {
	c := benchContract(t, "1.0.0")
	return frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) {
			framework.HandleUnary(s, c, "ReportStatus", func(ctx context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				hold()
				num, err := strconv.Atoi(strings.TrimPrefix(n.NodeName, "node-"))
				if err != nil {
					return nil, framework.Errorf(framework.CodeInvalidArgument, "bad node name %q", n.NodeName)
				}
				if num%10 == 9 {
					return nil, framework.Errorf(framework.CodeConflict, "node %d refused", num)
				}
				if traces != nil {
					traces.Store(num, framework.CallFromContext(ctx).Header.Get("traceparent"))
				}
				return &benchmsg.Ack{Accepted: true, Generation: int64(num)}, nil
			})
			framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				return &benchmsg.Ack{}, nil
			})
		})
}

func TestAutoBatchMergesConcurrentCallsAndAnswersEachCaller(t *testing.T) {
	const callers = 200
	// Every call is held in its handler until all callers have made
	// their calls (and 20 ms more), so the calls pile up behind the first
	// request however slowly a loaded machine starts the callers; the
	// wait for them is a hang bound only. StallAfter is a minute for the
	// same reason: on a loaded machine a request under way longer than
	// the default 20 ms gave its slot up, and more, smaller requests went
	// out than the calls' arrival asks for.
	var entered atomic.Int64
	allEntered := make(chan struct{})
	var traces sync.Map
	srv := echoServerHeld(t, func() {
		select {
		case <-allEntered:
		case <-time.After(time.Minute):
		}
		time.Sleep(20 * time.Millisecond) // real time: lets the calls that follow pile up too
	}, &traces)
	tr := &cuttable{next: framework.NewTransport(nil)}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport = tr
		c.AutoBatch = &framework.AutoBatch{MaxCalls: 32, MaxInFlight: 1, StallAfter: time.Minute}
		c.Interceptors = []framework.Interceptor{func(next framework.CallFunc) framework.CallFunc {
			return func(ctx context.Context, call *framework.Call) (any, error) {
				n := call.Request.(*benchmsg.NodeStatus).NodeName
				call.Header.Set("traceparent", "trace-"+n)
				if entered.Add(1) == callers {
					close(allEntered)
				}
				return next(ctx, call)
			}
		}}
	})
	require.NoError(t, cl.WaitReady(timeout(t, time.Minute)))

	ctx := timeout(t, 2*time.Minute)
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack, err := report(ctx, cl, i)
			if i%10 == 9 {
				if framework.CodeOf(err) != framework.CodeConflict || !strings.Contains(err.Error(), "node "+strconv.Itoa(i)+" refused") {
					wrong.Add(1)
					t.Errorf("caller %d: want its own conflict, got %v", i, err)
				}
				return
			}
			if err != nil || ack.Generation != int64(i) {
				wrong.Add(1)
				t.Errorf("caller %d: got %+v, %v", i, ack, err)
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, wrong.Load())
	multi := tr.count(protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod))
	single := tr.count(protocol.CallPath("bench", "1.0.0", "ReportStatus"))
	assert.Positive(t, multi, "some calls were merged")
	assert.Less(t, multi+single, int64(callers/4), "200 concurrent calls took far fewer requests")
	t.Logf("%d calls in %d multi-call and %d single requests", callers, multi, single)

	// Each call kept its own headers inside the merged request.
	traces.Range(func(k, v any) bool {
		assert.Equal(t, "trace-node-"+leftPad(k.(int)), v)
		return true
	})
}

func leftPad(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

func TestAutoBatchSurvivesServerReplacement(t *testing.T) {
	a := startBench(t, "127.0.0.1:0", "1.0.0")
	b := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "1.0.0", []string{a.URL, b.URL}, func(c *framework.ClientConfig) {
		c.AutoBatch = &framework.AutoBatch{}
	})
	require.Eventually(t, func() bool { return readyCount(cl) == 2 }, 5*time.Second, 5*time.Millisecond)
	// Each caller calls before, during and after the replacement: it goes
	// on until it has started afterCalls calls once the replacement
	// serves (at most maxCalls), so the calls span the replacement however
	// slowly a loaded machine answers them. The deadline only bounds a
	// stuck call.
	const callers, afterCalls, maxCalls = 16, 3, 200
	ctx := timeout(t, time.Minute)
	replaced := make(chan struct{})
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, after := 0, 0; i < maxCalls && after < afterCalls; i++ {
				select {
				case <-replaced:
					after++
				default:
				}
				calls.Add(1)
				if _, err := report(ctx, cl, i); err != nil {
					failed.Add(1)
					t.Errorf("call: %v", err)
				}
			}
		}()
	}
	// Replace a once calls reach it.
	require.Eventually(t, func() bool { return a.handled.Load() > 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, a.Stop())
	again := startBench(t, a.Addr, "1.0.0")
	close(replaced)
	wg.Wait()
	assert.Zero(t, failed.Load())
	assert.Equal(t, calls.Load(), a.handled.Load()+b.handled.Load()+again.handled.Load(), "every call processed exactly once")
	t.Logf("%d calls, %d of them answered by the replaced server, %d by its replacement",
		calls.Load(), a.handled.Load(), again.handled.Load())
}

// countedClient is a client at srv whose requests are counted by path.
func countedClient(t *testing.T, srv *frameworktest.Running, mod func(*framework.ClientConfig)) (*framework.Client, *cuttable) {
	t.Helper()
	tr := &cuttable{next: framework.NewTransport(nil)}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport = tr
		if mod != nil {
			mod(c)
		}
	})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	return cl, tr
}

// concurrently runs fn(0) … fn(n-1) at once and waits for them.
func concurrently(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

func TestDefaultClientSendsALoneCallersCallsAlone(t *testing.T) {
	srv := echoServer(t, 0, nil)
	cl, tr := countedClient(t, srv, nil)
	ctx := timeout(t, 10*time.Second)
	for i := 0; i < 20; i++ {
		_, err := report(ctx, cl, i*10)
		require.NoError(t, err)
	}
	assert.Zero(t, tr.count(protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod)), "nothing waits for companions")
	assert.Equal(t, int64(20), tr.count(protocol.CallPath("bench", "1.0.0", "ReportStatus")))
}

func TestAutoBatchMergesCallsThatFindEverySlotBusy(t *testing.T) {
	srv := echoServer(t, 20*time.Millisecond, nil)
	// The defaults but for StallAfter, which on a loaded machine the
	// handler's 20ms would reach, letting requests go out beside the slots.
	cl, tr := countedClient(t, srv, func(c *framework.ClientConfig) { c.AutoBatch = &framework.AutoBatch{StallAfter: time.Minute} })
	ctx := timeout(t, 20*time.Second)
	const callers = 64
	concurrently(callers, func(i int) {
		ack, err := report(ctx, cl, i*10)
		if assert.NoError(t, err, "caller %d", i) {
			assert.Equal(t, int64(i*10), ack.Generation, "caller %d got its own answer", i)
		}
	})
	multi := tr.count(protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod))
	single := tr.count(protocol.CallPath("bench", "1.0.0", "ReportStatus"))
	assert.Positive(t, multi)
	assert.Less(t, multi+single, int64(callers/4), "64 concurrent calls took far fewer requests")
}

func TestDisabledAutoBatchSendsEveryCallAlone(t *testing.T) {
	srv := echoServer(t, 20*time.Millisecond, nil)
	cl, tr := countedClient(t, srv, func(c *framework.ClientConfig) { c.AutoBatch = &framework.AutoBatch{Disabled: true} })
	ctx := timeout(t, 20*time.Second)
	const callers = 32
	concurrently(callers, func(i int) {
		_, err := report(ctx, cl, i*10)
		assert.NoError(t, err, "caller %d", i)
	})
	assert.Zero(t, tr.count(protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod)))
	assert.Equal(t, int64(callers), tr.count(protocol.CallPath("bench", "1.0.0", "ReportStatus")))
}

// Concurrent batch calls never travel inside a multi-call, which carries
// unary calls only.
func TestDefaultClientSendsBatchCallsAlone(t *testing.T) {
	srv := echoServer(t, 0, nil)
	cl, tr := countedClient(t, srv, nil)
	ctx := timeout(t, 20*time.Second)
	const callers = 32
	concurrently(callers, func(i int) {
		res, err := framework.CallBatch[benchmsg.NodeStatus, benchmsg.Ack](ctx, cl, "ReportStatuses",
			[]*benchmsg.NodeStatus{benchmsg.Node(i), benchmsg.Node(i + 1)})
		if assert.NoError(t, err, "caller %d", i) && assert.Len(t, res, 2) {
			assert.NoError(t, res[0].Err)
			assert.NoError(t, res[1].Err)
		}
	})
	assert.Zero(t, tr.count(protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod)))
	assert.Equal(t, int64(callers), tr.count(protocol.CallPath("bench", "1.0.0", "ReportStatuses")))
}

// A call behind requests held up by a slow handler waits at most
// StallAfter for a slot, not until they finish.
func TestAutoBatchCallsDoNotWaitForSlowHandlers(t *testing.T) {
	release := make(chan struct{})
	var held atomic.Int64
	c := benchContract(t, "1.0.0")
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) {
			framework.HandleUnary(s, c, "ReportStatus", func(ctx context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				if n.NodeName == benchmsg.Node(0).NodeName {
					held.Add(1)
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return &benchmsg.Ack{Accepted: true}, nil
			})
			framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				return &benchmsg.Ack{}, nil
			})
		})
	defer close(release)
	cl, _ := countedClient(t, srv, func(c *framework.ClientConfig) {
		c.AutoBatch = &framework.AutoBatch{MaxInFlight: 2, StallAfter: 10 * time.Millisecond}
	})
	ctx := timeout(t, 20*time.Second)
	slow := make(chan error, 2)
	for range 2 { // both slots
		go func() { _, err := report(ctx, cl, 0); slow <- err }()
	}
	require.Eventually(t, func() bool { return held.Load() == 2 }, 10*time.Second, time.Millisecond)
	for i := 1; i <= 3; i++ {
		_, err := report(ctx, cl, i)
		require.NoError(t, err, "call %d while both slots are held", i)
	}
	assert.Empty(t, slow, "the slow calls are still held")
}
