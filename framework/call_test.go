package framework_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"

	"strings"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

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

// TestDeadlinePropagatesToTheHandler: the handler's context ends when its
// caller's does. Both are read on the process's one clock, so the check
// holds however slow the machine: the caller sends what is left of its
// deadline rounded up, so the handler's deadline is never earlier than the
// caller's, and later only by the request's time in transit, which is
// less than the time from the call's start to the handler's first look.
func TestDeadlinePropagatesToTheHandler(t *testing.T) {
	c := benchContract(t, "1.0.0")
	type seen struct{ deadline, at time.Time } // the handler's deadline, and when it looked
	deadlines := make(chan seen, 1)
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) {
			framework.HandleUnary(s, c, "ReportStatus", func(ctx context.Context, _ *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				dl, _ := ctx.Deadline() // zero: none
				deadlines <- seen{dl, time.Now()}
				if dl.IsZero() {
					return &benchmsg.Ack{}, nil
				}
				<-ctx.Done() // outlive the caller's deadline
				return nil, ctx.Err()
			})
			framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				return &benchmsg.Ack{}, nil
			})
		})
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	require.NoError(t, cl.WaitReady(timeout(t, 5*time.Second)))
	start := time.Now()
	// Long enough that the call reaches the handler before its deadline
	// on a loaded machine; the handler then waits it out.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	_, err := report(ctx, cl, 1)
	assert.Equal(t, framework.CodeDeadlineExceeded, framework.CodeOf(err))
	var got seen
	select {
	case got = <-deadlines:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached its handler")
	}
	require.False(t, got.deadline.IsZero(), "the handler's context has no deadline")
	late := got.deadline.Sub(callerDeadline)
	assert.GreaterOrEqual(t, late, time.Duration(0), "the handler's deadline is before its caller's")
	assert.LessOrEqual(t, late, got.at.Sub(start)+time.Microsecond, // the rounding up of the remaining time
		"the handler's deadline is later than its caller's by more than the request's time in transit")
}

// A handler that passes on a downstream peer's incompatible_peer must not
// make its caller resend a call it already handled.
func TestHandlerErrorWithAResendCodeIsNotResent(t *testing.T) {
	var ran atomic.Int64
	c := benchContract(t, "1.0.0")
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"}, func(s *framework.Server) {
		framework.HandleUnary(s, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			ran.Add(1)
			return nil, framework.Errorf(framework.CodeIncompatiblePeer, "the scheduler downstream speaks another version")
		})
		framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			ran.Add(1)
			return nil, framework.Errorf(framework.CodeHandshakeRequired, "downstream session lost")
		})
	})
	for _, auto := range []*framework.AutoBatch{nil, {}} {
		cl := benchClient(t, "1.0.0", []string{srv.URL}, func(cfg *framework.ClientConfig) { cfg.AutoBatch = auto })
		before := ran.Load()
		_, err := report(timeout(t, 5*time.Second), cl, 1)
		assert.Equal(t, framework.CodeUnavailable, framework.CodeOf(err))
		assert.Contains(t, err.Error(), "downstream speaks another version")
		assert.Equal(t, int64(1), ran.Load()-before, "the handler ran once")
	}
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	res, err := framework.CallBatch[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 5*time.Second), cl, "ReportStatuses",
		[]*benchmsg.NodeStatus{benchmsg.Node(1)})
	require.NoError(t, err)
	assert.Equal(t, framework.CodeUnavailable, framework.CodeOf(res[0].Err))
}

func TestMultiCallsAreBounded(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0")
	token := openSession(t, srv.URL, "1.0.0")
	call := `{"method":"ReportStatus","request":` + string(mustMarshal(t, benchmsg.Node(1))) + `}`
	body := `{"calls":[` + strings.Repeat(call+",", framework.MaxMultiCalls) + call + `]}`
	a := do(t, http.MethodPost, srv.URL+protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod),
		map[string]string{protocol.HeaderSession: token}, []byte(body))
	assert.Equal(t, "invalid_argument", a.code)
	assert.Contains(t, a.message, "at most 256 calls")
	assert.Zero(t, srv.handled.Load())
}
