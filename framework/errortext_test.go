package framework_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// The texts a person reads when a call finds no peer: one line, each fact
// once. What ended the call is the message; the peers' state is a separate
// fact, reached with errors.As.
func TestErrorTextsSayWhatEndedTheCall(t *testing.T) {
	up := startBench(t, "127.0.0.1:0", "1.0.0")
	other := startBench(t, "127.0.0.1:0", "2.0.0")
	ok := benchClient(t, "1.0.0", []string{up.URL})
	mismatched := benchClient(t, "1.0.0", []string{other.URL})
	endpointStateEventually(t, mismatched, other.URL, "refused")
	require.NoError(t, ok.WaitReady(timeout(t, 10*time.Second)))
	refusal := "no compatible nodecontroller for bench 1.0.0: " + other.URL +
		" refused (version_mismatch): nodecontroller speaks bench 2.0.0; kubelet offers 1.0.0: upgrade kubelet or run nodecontroller with fork mode"

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()

	for _, tc := range []struct {
		name string
		cl   *framework.Client
		ctx  func() context.Context
		opts []framework.CallOption
		// want is the whole text; is, the context error it matches;
		// waited, whether the call waited for a peer (and so carries a
		// peer state); refused, whether that state says a peer refused.
		want            string
		is              error
		waited, refused bool
	}{{
		// Before: canceled: context canceled: no compatible nodecontroller
		// for bench 1.0.0: http://…: connecting (the server was up and
		// compatible; the call was made at start-up).
		name: "cancelled context, compatible server", cl: ok, ctx: func() context.Context { return cancelled },
		want: "canceled: context canceled", is: context.Canceled,
	}, {
		name: "expired context, compatible server", cl: ok, ctx: func() context.Context { return expired },
		want: "deadline_exceeded: context deadline exceeded", is: context.DeadlineExceeded,
	}, {
		// Before: canceled: context canceled: no compatible nodecontroller
		// for bench 1.0.0: http://…: refused: incompatible_peer: handshake
		// refused (version_mismatch): nodecontroller speaks …
		name: "cancelled context, incompatible server", cl: mismatched, ctx: func() context.Context { return cancelled },
		want: "canceled: context canceled", is: context.Canceled, waited: true, refused: true,
	}, {
		name: "deadline while waiting, incompatible server", cl: mismatched,
		ctx: func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		},
		want: "deadline_exceeded: context deadline exceeded", is: context.DeadlineExceeded, waited: true, refused: true,
	}, {
		// Before: incompatible_peer: no compatible nodecontroller for bench
		// 1.0.0: http://…: refused: incompatible_peer: handshake refused
		// (version_mismatch): nodecontroller speaks bench 2.0.0; …
		name: "fail fast, incompatible server", cl: mismatched, ctx: context.Background, opts: []framework.CallOption{framework.FailFast()},
		want: "incompatible_peer: " + refusal, waited: true, refused: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report(tc.ctx(), tc.cl, 1, tc.opts...)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			var ps *framework.PeerState
			if !tc.waited {
				assert.False(t, errors.As(err, &ps), "a call that had a peer carries no peer state")
				return
			}
			require.ErrorAs(t, err, &ps, "the peers' state is reachable")
			assert.Equal(t, tc.refused, ps.Refused)
			require.Len(t, ps.Endpoints, 1)
			if tc.refused {
				assert.Equal(t, refusal, ps.Error())
				assert.Equal(t, "refused", ps.Endpoints[0].State)
			}
			var fe *framework.Error
			require.ErrorAs(t, err, &fe)
			assert.NotContains(t, fe.Message(), "\n")
		})
	}

	// Before: not ready: bench client: incompatible_peer: … on /readyz, and
	// lockstepctl printed "not ready: not ready: bench client: …".
	agent := frameworktest.StartServer(t, framework.ServerConfig{Component: "agent", Release: "1.0.0"}, func(s *framework.Server) { s.AddClient(mismatched) })
	assert.Equal(t, "not ready: bench client: incompatible_peer: "+refusal, agent.Server.Ready().Error())
	st := agent.Server.Status()
	assert.Equal(t, "bench client: incompatible_peer: "+refusal, st.NotReady)
	assert.Equal(t, 1, strings.Count(st.NotReady, "incompatible_peer"))
	assert.True(t, errors.Is(mismatched.WaitReady(cancelled), context.Canceled))
	assert.Equal(t, "canceled: context canceled", mismatched.WaitReady(cancelled).Error())
}
