package framework_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
)

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
