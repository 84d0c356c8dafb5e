package framework_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// itemsSeen records, for every call request a client's transport carries,
// the traceparent of each call in it: the request's own, or its items'
// from MultiCallItemHeaders.
type itemsSeen struct {
	next http.RoundTripper

	mu     sync.Mutex
	multis int
	seen   map[string]int // traceparent -> requests it travelled in
	other  [][]string     // what MultiCallItemHeaders said of other requests
}

func (s *itemsSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	items := framework.MultiCallItemHeaders(r, "traceparent")
	s.mu.Lock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/"+protocol.MultiCallMethod):
		s.multis++
		for _, tp := range items {
			s.seen[tp]++
		}
	default:
		if items != nil {
			s.other = append(s.other, items)
		}
		if tp := r.Header.Get("traceparent"); tp != "" {
			s.seen[tp]++
		}
	}
	s.mu.Unlock()
	return s.next.RoundTrip(r)
}

// A transport learns which calls a multi-call carries, and each one's
// headers, without decoding its body: every call's traceparent is seen
// exactly once, in the multi-call that carried it or on its own request,
// and requests that are no multi-call carry no items.
func TestMultiCallItemHeadersNameEachCallOfAMultiCall(t *testing.T) {
	srv := echoServer(t, 20*time.Millisecond, nil)
	tr := &itemsSeen{next: framework.NewTransport(nil), seen: map[string]int{}}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Transport = tr
		c.AutoBatch = &framework.AutoBatch{MaxCalls: 32, MaxInFlight: 1, StallAfter: time.Minute}
		c.Interceptors = []framework.Interceptor{func(next framework.CallFunc) framework.CallFunc {
			return func(ctx context.Context, call *framework.Call) (any, error) {
				call.Header.Set("traceparent", "trace-"+call.Request.(*benchmsg.NodeStatus).NodeName)
				return next(ctx, call)
			}
		}}
	})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))

	const callers = 64
	ctx := timeout(t, 20*time.Second)
	concurrently(callers, func(i int) {
		_, err := report(ctx, cl, i*10) // multiples of 10: none is refused
		assert.NoError(t, err, "caller %d", i)
	})

	tr.mu.Lock()
	defer tr.mu.Unlock()
	require.Positive(t, tr.multis, "some calls were merged")
	assert.Empty(t, tr.other, "requests other than multi-calls carry no items")
	assert.Len(t, tr.seen, callers)
	for i := range callers {
		assert.Equal(t, 1, tr.seen["trace-node-"+leftPad(i*10)], "call %d travelled once", i*10)
	}
	assert.Nil(t, framework.MultiCallItemHeaders(httptestRequest(t), "traceparent"))
}

// httptestRequest is a request no client sent.
func httptestRequest(t *testing.T) *http.Request {
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1"+protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod), nil)
	require.NoError(t, err)
	return r
}
