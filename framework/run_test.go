package framework_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// freeAddr returns a loopback address nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// Server.Run serves until its context ends, then drains; Client.Run closes
// the client when its context ends, which closes its session, so the drain
// ends without waiting for the session to lapse.
func TestRunServesUntilTheContextEndsThenDrains(t *testing.T) {
	addr := freeAddr(t)
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Addr: addr,
		SessionTTL: time.Minute, DrainTimeout: time.Minute, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	c := benchContract(t, "1.0.0")
	framework.HandleUnary(srv, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
		return &benchmsg.Ack{Accepted: true}, nil
	})
	framework.HandleBatch(srv, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
		return &benchmsg.Ack{Accepted: true}, nil
	})
	srvCtx, stopServer := context.WithCancel(context.Background())
	defer stopServer()
	served := make(chan error, 1)
	go func() { served <- framework.Runnable(srv.Run).Start(srvCtx) }()

	cl, err := framework.NewClient(c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{"http://" + addr}, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	clCtx, stopClient := context.WithCancel(context.Background())
	defer stopClient()
	clientDone := make(chan error, 1)
	go func() { clientDone <- framework.Runnable(cl.Run).Start(clCtx) }()

	ack, err := report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	assert.True(t, ack.Accepted)
	require.NoError(t, srv.Healthz(&http.Request{}))
	require.NoError(t, cl.Healthz(&http.Request{}))
	require.Len(t, srv.Sessions(), 1)

	stopServer()
	require.Eventually(t, srv.Draining, 10*time.Second, time.Millisecond)
	assert.Error(t, srv.Healthz(&http.Request{}), "a draining server is not ready")
	select {
	case err := <-served:
		t.Fatalf("Run returned (%v) while a session was still open: it did not drain", err)
	default:
	}
	// The session's TTL and the drain timeout are a minute: only the
	// client's close can end the drain within the test's bound.
	stopClient()
	require.NoError(t, <-clientDone)
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the last session closed")
	}
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the listener is closed")
}

func TestRunReportsWhatStopsItServing(t *testing.T) {
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	assert.ErrorContains(t, srv.Run(context.Background()), "ServerConfig.Addr")

	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()
	srv, err = framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		Addr: held.Addr().String(), Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	assert.ErrorContains(t, srv.Run(context.Background()), "address already in use")
}
