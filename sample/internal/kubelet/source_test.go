package kubelet_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// sourceListener records the remote address of every connection it
// accepts.
type sourceListener struct {
	net.Listener
	mu      sync.Mutex
	sources map[string]int
}

func (l *sourceListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.sources[c.RemoteAddr().(*net.TCPAddr).IP.String()]++
		l.mu.Unlock()
	}
	return c, err
}

// With Config.SourceAddr each node dials from its own address, as nodes
// do from their own machines: the node controller sees one source per
// node, and none other.
func TestHollowNodesOwnSourceAddresses(t *testing.T) {
	const nodes = 3
	ca, err := certs.NewCA("hollow")
	require.NoError(t, err)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", NodeGrace: time.Second, Logger: frameworktest.Quiet(),
		Server: framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: 3 * time.Second,
			DrainTimeout: 300 * time.Millisecond, Logger: frameworktest.Quiet(), MTLS: creds}})
	require.NoError(t, err)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &sourceListener{Listener: inner, sources: map[string]int{}}
	served := make(chan struct{})
	go func() { defer close(served); _ = nc.Server().Serve(l) }()
	k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: nodes, ChangeEvery: -1, Logger: frameworktest.Quiet(),
		NodeTLS:    kubelet.NodeCertificates(ca, ca.Pool(), ""),
		SourceAddr: func(i int) net.IP { return net.IPv4(127, 0, 5, byte(1+i)) },
		Client:     framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{"https://" + inner.Addr().String()}, Logger: frameworktest.Quiet()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		k.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = nc.Server().Shutdown(sctx)
		<-served
		nc.Close()
	}()
	require.Eventually(t, func() bool { return k.Ready() == nil && len(nc.Health()) == nodes }, 20*time.Second, 10*time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	got := map[string]bool{}
	for ip := range l.sources {
		got[ip] = true
	}
	assert.Equal(t, map[string]bool{"127.0.5.1": true, "127.0.5.2": true, "127.0.5.3": true}, got)
}
