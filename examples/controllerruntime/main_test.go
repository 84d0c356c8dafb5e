package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/lockstep-dev/lockstep/examples/internal/nodeinfo"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// The manager starts the lockstep server and client, reports ready on its
// /readyz only once the client holds a session with its peer, serves
// agents, and drains both when its context ends.
func TestManagerRunsLockstep(t *testing.T) {
	peer := frameworktest.StartServer(t, framework.ServerConfig{Component: "controller", Release: "1.0.0"},
		func(s *framework.Server) { nodeinfo.Register(s) })
	listen, probes := freeAddr(t), freeAddr(t)
	mgr, err := newManager(&rest.Config{Host: "http://127.0.0.1:1"}, listen, peer.URL, probes)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()

	readyz := func() int {
		resp, err := http.Get("http://" + probes + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return readyz() == http.StatusOK }, 20*time.Second, 10*time.Millisecond)
	require.Len(t, peer.Server.Sessions(), 1, "the component's client holds a session with its peer")

	agent := frameworktest.NewClient(t, nodeinfo.Contract, framework.ClientConfig{Component: "agent", Release: "1.0.0",
		Endpoints: []string{"http://" + listen}})
	callCtx, cancelCall := context.WithTimeout(ctx, 10*time.Second)
	defer cancelCall()
	ack, err := nodeinfo.Report(callCtx, agent, &nodeinfo.NodeReport{Node: "node-1", Ready: true})
	require.NoError(t, err)
	assert.Equal(t, int64(1), ack.Seen)

	// The agent closes its session once it sees the drain (as every
	// lockstep client does), so the manager's stop completes.
	cancel()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not stop")
	}
	assert.Empty(t, peer.Server.Sessions(), "the client closed its session with its peer")
	_, err = net.DialTimeout("tcp", listen, time.Second)
	assert.Error(t, err, "the lockstep server stopped listening")
}
