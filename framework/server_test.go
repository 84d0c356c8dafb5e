package framework_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

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
