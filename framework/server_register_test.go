package framework_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
)

// A server closed (or shut down) before it ever started serves nothing:
// registering a handler or a route on it is the same programming mistake
// as registering one on a running server, and panics saying so.
func TestRegisteringOnAServerClosedBeforeItStartedPanics(t *testing.T) {
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", NoMetrics: true})
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	c := benchContract(t, "1.0.0")
	assert.PanicsWithValue(t, "lockstep: handlers must be registered before the server starts or closes", func() {
		framework.HandleUnary(srv, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) { return nil, nil })
	})
	assert.PanicsWithValue(t, "lockstep: routes must be added before the server starts or closes", func() {
		srv.Handle("/metrics", http.NotFoundHandler())
	})
}
