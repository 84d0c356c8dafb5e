package framework_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// h2cOnly is a transport that speaks only HTTP/2 without TLS (prior
// knowledge), as a multiplexing client would.
func h2cOnly() *http.Transport {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return tr
}

func TestServerAcceptsHTTP2WithoutTLS(t *testing.T) {
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0"},
		func(s *framework.Server) { benchgen.Register(s, h2cAck{}) })
	tr := h2cOnly()
	t.Cleanup(tr.CloseIdleConnections)

	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + protocol.PathStatus)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, resp.ProtoMajor, "the status was not served over HTTP/2")

	// A whole client over it: handshake, then a call.
	cl := frameworktest.NewClient(t, benchgen.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{srv.URL}, Transport: tr})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.WaitReady(ctx))
	ack, err := benchgen.NewClient(cl).ReportStatus(ctx, h2cNode(t))
	require.NoError(t, err)
	require.True(t, ack.Accepted)
}

type h2cAck struct{}

func (h2cAck) ReportStatus(context.Context, *benchgen.NodeStatus) (*benchgen.Ack, error) {
	return &benchgen.Ack{Accepted: true, Generation: 1}, nil
}

func (a h2cAck) ReportStatuses(ctx context.Context, n *benchgen.NodeStatus) (*benchgen.Ack, error) {
	return a.ReportStatus(ctx, n)
}

func h2cNode(t *testing.T) *benchgen.NodeStatus {
	t.Helper()
	var n benchgen.NodeStatus
	require.NoError(t, n.UnmarshalJSON(benchmsg.InstanceJSON()))
	return &n
}
