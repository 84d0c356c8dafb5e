package framework_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

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

	// A client of an incompatible server: ReadyTimeout bounds the wait
	// separately from the context, which has no deadline. On the client's
	// fake clock the call is still waiting just before ReadyTimeout has
	// passed since it blocked and ends once it has.
	const readyTimeout = 1234 * time.Millisecond // no other timer of the client's lasts this long
	clock := &timerSpy{FakeClock: clockwork.NewFakeClock(), of: readyTimeout, made: make(chan struct{}, 1)}
	other := benchClient(t, "2.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.ReadyTimeout = readyTimeout
		c.Clock = clock
	})
	done := make(chan error, 1)
	go func() {
		_, err := report(context.Background(), other, 1)
		done <- err
	}()
	select {
	case <-clock.made:
	case err := <-done:
		t.Fatalf("the call ended before it waited: %v", err)
	case <-timeout(t, 30*time.Second).Done():
		t.Fatal("the call never started its ready timeout")
	}
	clock.Advance(readyTimeout - time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the call ended before its ready timeout: %v", err)
	default:
	}
	clock.Advance(time.Millisecond)
	var err error
	select {
	case err = <-done:
	case <-timeout(t, 30*time.Second).Done():
		t.Fatal("the call outlived its ready timeout")
	}
	assert.Contains(t, []framework.Code{framework.CodeUnavailable, framework.CodeIncompatiblePeer}, framework.CodeOf(err), "%v", err)
	assert.Zero(t, srv.handled.Load())

	st := srv.Server.Status()
	assert.Equal(t, []string{"1.0.0"}, st.Contracts["bench"])
	assert.True(t, st.Ready)
	require.Len(t, st.Sessions, 1)
	assert.Equal(t, "1.0.0", st.Sessions[0].Version)
}

// timerSpy is a fake clock that tells when a timer of one duration is made.
type timerSpy struct {
	*clockwork.FakeClock
	of   time.Duration
	made chan struct{}
}

func (c *timerSpy) NewTimer(d time.Duration) clockwork.Timer {
	tm := c.FakeClock.NewTimer(d)
	if d == c.of {
		select {
		case c.made <- struct{}{}:
		default:
		}
	}
	return tm
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

func TestServeAfterShutdownReleasesTheAddress(t *testing.T) {
	for _, stop := range []string{"shutdown", "close"} {
		srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"})
		require.NoError(t, err)
		c := benchContract(t, "1.0.0")
		framework.HandleUnary(srv, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return &benchmsg.Ack{}, nil })
		framework.HandleBatch(srv, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return &benchmsg.Ack{}, nil })
		if stop == "shutdown" {
			require.NoError(t, srv.Shutdown(context.Background()))
		} else {
			require.NoError(t, srv.Close())
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, srv.Serve(l), stop)
		again, err := net.Listen("tcp", addr)
		require.NoError(t, err, "%s: the address is free again", stop)
		require.NoError(t, again.Close())
	}
}
