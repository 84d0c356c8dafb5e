package framework_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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

// cuttable is an injectable transport that can be cut, as a network
// partition or a killed process would, and counts what passes.
type cuttable struct {
	next     http.RoundTripper
	cut      atomic.Bool
	requests atomic.Int64
	paths    sync.Map // path -> *atomic.Int64
}

func (c *cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("cut by test")
	}
	c.requests.Add(1)
	n, _ := c.paths.LoadOrStore(r.URL.Path, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return c.next.RoundTrip(r)
}

func (c *cuttable) count(path string) int64 {
	if n, ok := c.paths.Load(path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

func TestIdleSessionLivesOnHeartbeatsAndALostClientIsReported(t *testing.T) {
	joined := make(chan framework.SessionInfo, 4)
	lost := make(chan framework.SessionInfo, 4)
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = 600*time.Millisecond, 100*time.Millisecond
		c.OnPeerJoined = func(s framework.SessionInfo) { joined <- s }
		c.OnPeerLost = func(s framework.SessionInfo) { lost <- s }
	})
	tr := &cuttable{next: framework.NewTransport(nil)}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport = tr
		c.Instance = "node-1"
	})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	j := <-joined
	assert.Equal(t, "node-1", j.Peer.Instance)
	assert.Equal(t, "kubelet", j.Peer.Component)

	// Idle for three TTLs: heartbeats keep the session.
	time.Sleep(1800 * time.Millisecond)
	select {
	case l := <-lost:
		t.Fatalf("an idle session with heartbeats was lost: %+v", l)
	default:
	}
	assert.GreaterOrEqual(t, tr.count(protocol.PathHeartbeat), int64(5))
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)

	// The client vanishes without a word: lost within TTL plus a heartbeat
	// interval (plus the expiry scan), measured on the server's clock.
	tr.cut.Store(true)
	cutAt := time.Now()
	select {
	case l := <-lost:
		assert.Equal(t, "node-1", l.Peer.Instance)
		assert.Less(t, time.Since(cutAt), 600*time.Millisecond+100*time.Millisecond+200*time.Millisecond)
		assert.GreaterOrEqual(t, l.Idle, 600*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("a vanished client was never reported lost")
	}
	assert.Empty(t, srv.Server.Sessions())
}

func TestResyncRequestReachesTheClient(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = time.Second, 50*time.Millisecond
	})
	resynced := make(chan struct{}, 1)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Instance = "node-9"
		c.OnResync = func() { resynced <- struct{}{} }
	})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	assert.False(t, srv.Server.RequestResync("bench", "node-unknown"))
	require.True(t, srv.Server.RequestResync("bench", "node-9"))
	select {
	case <-resynced:
	case <-time.After(5 * time.Second):
		t.Fatal("resync request never reached the client")
	}
}

func TestInterceptorsWrapCallsOnBothSides(t *testing.T) {
	var mu sync.Mutex
	var order []string
	record := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	var seenTrace string
	var seenPeer string
	kinds := map[framework.EntryKind]int{}
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.Interceptors = []framework.Interceptor{
			func(next framework.CallFunc) framework.CallFunc {
				return func(ctx context.Context, call *framework.Call) (any, error) {
					mu.Lock()
					kinds[call.Kind]++
					mu.Unlock()
					if call.Kind != framework.EntryCall {
						// Server interceptors wrap every entry: the
						// handshake came first.
						return next(ctx, call)
					}
					record("server-outer")
					seenTrace = call.Header.Get("traceparent")
					seenPeer = call.Peer.Component
					return next(ctx, call)
				}
			},
			func(next framework.CallFunc) framework.CallFunc {
				return func(ctx context.Context, call *framework.Call) (any, error) {
					if call.Kind != framework.EntryCall {
						return next(ctx, call)
					}
					record("server-inner:" + call.Method)
					if call.Request.(*benchmsg.NodeStatus).NodeName == "node-0666" {
						return nil, framework.Errorf(framework.CodePermissionDenied, "denied by policy")
					}
					return next(ctx, call)
				}
			},
		}
	})
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Interceptors = []framework.Interceptor{func(next framework.CallFunc) framework.CallFunc {
			return func(ctx context.Context, call *framework.Call) (any, error) {
				record("client")
				call.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
				out, err := next(ctx, call)
				record("client-done:" + call.Peer.Component)
				return out, err
			}
		}}
	})
	_, err := report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"client", "server-outer", "server-inner:ReportStatus", "client-done:nodecontroller"}, order)
	assert.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", seenTrace)
	assert.Equal(t, "kubelet", seenPeer)

	_, err = report(timeout(t, 5*time.Second), cl, 666)
	assert.Equal(t, framework.CodePermissionDenied, framework.CodeOf(err))
	assert.Contains(t, err.Error(), "denied by policy")
	assert.Equal(t, int64(1), srv.handled.Load())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, kinds[framework.EntryHandshake], "the interceptors wrapped the handshake")
	assert.Equal(t, 2, kinds[framework.EntryCall])
}

func TestBatchAnswersEachItemInOrder(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	bad := benchmsg.Node(3)
	bad.NodeName = "Not_A_DNS_Name"
	reject := benchmsg.Node(4)
	reject.NodeName = "node-reject"
	items := []*benchmsg.NodeStatus{benchmsg.Node(1), benchmsg.Node(2), bad, reject, benchmsg.Node(5)}
	results, err := framework.CallBatch[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 5*time.Second), cl, "ReportStatuses", items)
	require.NoError(t, err)
	require.Len(t, results, 5)
	for _, i := range []int{0, 1, 4} {
		require.NoError(t, results[i].Err, "item %d", i)
		assert.True(t, results[i].Value.Accepted)
	}
	assert.Equal(t, int64(1), results[0].Value.Generation)
	assert.Equal(t, int64(2), results[1].Value.Generation)
	assert.Equal(t, int64(3), results[4].Value.Generation, "items run in order; invalid ones never reach the handler")
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(results[2].Err))
	assert.Equal(t, framework.CodeConflict, framework.CodeOf(results[3].Err))
	assert.Contains(t, results[3].Err.Error(), "cordoned")

	empty, err := framework.CallBatch[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 5*time.Second), cl, "ReportStatuses", nil)
	require.NoError(t, err)
	assert.Empty(t, empty)

	_, err = framework.CallBatch[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 5*time.Second), cl, "ReportStatus", items)
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err))
	_, err = report(timeout(t, 5*time.Second), cl, 1)
	require.NoError(t, err)
	_, err = framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 5*time.Second), cl, "ReportStatuses", benchmsg.Node(1))
	assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err))
}

func TestDeadlinePropagatesToTheHandler(t *testing.T) {
	c := benchContract(t, "1.0.0")
	deadlines := make(chan time.Duration, 1)
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) {
			framework.HandleUnary(s, c, "ReportStatus", func(ctx context.Context, _ *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				dl, ok := ctx.Deadline()
				if !ok {
					deadlines <- -1
					return &benchmsg.Ack{}, nil
				}
				deadlines <- time.Until(dl)
				<-ctx.Done() // outlive the caller's deadline
				return nil, ctx.Err()
			})
			framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				return &benchmsg.Ack{}, nil
			})
		})
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := report(ctx, cl, 1)
	assert.Equal(t, framework.CodeDeadlineExceeded, framework.CodeOf(err))
	d := <-deadlines
	assert.Greater(t, d, 200*time.Millisecond)
	assert.LessOrEqual(t, d, 400*time.Millisecond)
}

func TestReadyzRequiresPeersAndFailFastAndReadyTimeout(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.RequirePeers = []string{"bench"}
	})
	a := do(t, http.MethodGet, srv.URL+"/readyz", nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.Contains(t, string(a.body), "no live bench session")
	assert.Equal(t, http.StatusOK, do(t, http.MethodGet, srv.URL+"/livez", nil, nil).status)

	cl := benchClient(t, "1.0.0", []string{srv.URL})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	assert.Equal(t, http.StatusOK, do(t, http.MethodGet, srv.URL+"/readyz", nil, nil).status)

	// A client of an incompatible server: FailFast returns at once, and
	// ReadyTimeout bounds the wait separately from the context.
	other := benchClient(t, "2.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.ReadyTimeout = 200 * time.Millisecond })
	start := time.Now()
	_, err := report(context.Background(), other, 1)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Contains(t, []framework.Code{framework.CodeUnavailable, framework.CodeIncompatiblePeer}, framework.CodeOf(err))
	assert.Zero(t, srv.handled.Load())

	st := srv.Server.Status()
	assert.Equal(t, []string{"1.0.0"}, st.Contracts["bench"])
	assert.True(t, st.Ready)
	require.Len(t, st.Sessions, 1)
	assert.Equal(t, "1.0.0", st.Sessions[0].Version)
}

func TestServerRefusesToStartWithAMissingHandler(t *testing.T) {
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	framework.HandleUnary(srv, benchContract(t, "1.0.0"), "ReportStatus",
		func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return &benchmsg.Ack{}, nil })
	err = srv.Start()
	require.ErrorContains(t, err, "method ReportStatuses has no handler")
}

func TestSetupMistakesPanicWithPrefix(t *testing.T) {
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"})
	require.NoError(t, err)
	c := benchContract(t, "1.0.0")
	assert.PanicsWithValue(t, "lockstep: contract bench 1.0.0 declares no method Reboot", func() {
		framework.HandleUnary(srv, c, "Reboot", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return nil, nil })
	})
	assert.PanicsWithValue(t, "lockstep: ReportStatuses is a batch method; use HandleBatch", func() {
		framework.HandleUnary(srv, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return nil, nil })
	})
	other, err := framework.NewServer(framework.ServerConfig{Component: "scheduler", Release: "1.0.0"})
	require.NoError(t, err)
	assert.PanicsWithValue(t, "lockstep: contract bench is served by nodecontroller, not scheduler", func() {
		framework.HandleUnary(other, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return nil, nil })
	})
}

func TestSessionsOfManyClientsShareOneHeartbeatRequest(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = time.Second, 100*time.Millisecond
	})
	tr := &cuttable{next: framework.NewTransport(nil)}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	beats := framework.NewHeartbeats(frameworktest.Quiet(), nil)
	const nodes = 50
	clients := make([]*framework.Client, nodes)
	for i := range clients {
		clients[i] = benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
			c.Transport, c.Heartbeats = tr, beats
		})
	}
	for _, cl := range clients {
		require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	}
	require.Len(t, srv.Server.Sessions(), nodes)
	before := tr.count(protocol.PathHeartbeat)
	time.Sleep(1500 * time.Millisecond) // one and a half TTLs, all idle
	beatsSent := tr.count(protocol.PathHeartbeat) - before
	// About 15 intervals passed: one request each, not one per session.
	assert.GreaterOrEqual(t, beatsSent, int64(8))
	assert.LessOrEqual(t, beatsSent, int64(20))
	assert.Len(t, srv.Server.Sessions(), nodes, "every session stayed alive")

	// A server that restarted has none of the sessions: the heartbeat
	// answer says so and every client handshakes again.
	require.NoError(t, srv.Kill())
	again := startBench(t, srv.Addr, "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = time.Second, 100*time.Millisecond
	})
	require.Eventually(t, func() bool { return len(again.Server.Sessions()) == nodes }, 10*time.Second, 10*time.Millisecond)
	for _, cl := range clients {
		_, err := report(timeout(t, 5*time.Second), cl, 1)
		require.NoError(t, err)
	}
}

func TestExtraRoutesAndTopicsOnTheStatusPage(t *testing.T) {
	c := benchContract(t, "1.0.0")
	other := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"}, func(s *framework.Server) {
		ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return &benchmsg.Ack{}, nil }
		framework.HandleUnary(s, c, "ReportStatus", ack)
		framework.HandleBatch(s, c, "ReportStatuses", ack)
		s.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("lockstep_up 1\n"))
		}))
		assert.PanicsWithValue(t, "lockstep: /lockstep/extra is served by the runtime itself", func() {
			s.Handle("/lockstep/extra", http.NotFoundHandler())
		})
	})
	a := do(t, http.MethodGet, other.URL+"/metrics", nil, nil)
	assert.Equal(t, http.StatusOK, a.status)
	assert.Equal(t, "lockstep_up 1\n", string(a.body))
	assert.Panics(t, func() { other.Server.Handle("/late", http.NotFoundHandler()) }, "routes are fixed once serving")

	a = do(t, http.MethodGet, other.URL+protocol.PathStatus, nil, nil)
	require.Equal(t, http.StatusOK, a.status)
	var st framework.ServerStatus
	require.NoError(t, json.Unmarshal(a.body, &st))
	assert.NotNil(t, st.Topics)
}
