package framework_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
)

// withNodesTopic is a nodeinfo version that also declares the Nodes topic
// (objects are its Status, keyed by node), written by the server.
func withNodesTopic(t *testing.T, c *framework.Contract) *framework.Contract {
	t.Helper()
	m := c.Model()
	m.Topics = map[string]handshake.Topic{"Nodes": {Object: "Status", Key: "node",
		Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete}}
	out, err := framework.NewContract(m)
	require.NoError(t, err)
	return out
}

func TestForkedTopicConvertsEachChangeOnceForOldWatchers(t *testing.T) {
	v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
	var conversions atomic.Int64
	var nodes *framework.TopicWriter[StatusV2]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0"}, func(s *framework.Server) {
		h := func(context.Context, *StatusV2) (*AckV2, error) { return &AckV2{}, nil }
		framework.HandleUnary(s, v2, "Report", h)
		framework.HandleUnary(s, v2, "Describe", h)
		framework.HandleBatch(s, v2, "ReportMany", h)
		framework.ForkUnary(s, v1, v2, "Report", statusV1ToV2, ackV2ToV1)
		framework.ForkBatch(s, v1, v2, "ReportMany", statusV1ToV2, ackV2ToV1)
		framework.HandleUnary(s, v1, "OnlyInOldV1", func(context.Context, *StatusV1) (*AckV1, error) { return &AckV1{}, nil })
		nodes = framework.ServeTopic[StatusV2](s, v2, "Nodes")
		framework.ForkTopic(s, v1, nodes, func(n *StatusV2) (*StatusV1, error) {
			conversions.Add(1)
			return statusV2ToV1(n)
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}}
	const oldWatchers = 3
	var olds []*framework.Informer[StatusV1]
	for i := 0; i < oldWatchers; i++ {
		inf, err := framework.Watch[StatusV1](ctx, frameworktest.NewClient(t, v1, cfg), "Nodes", framework.InformerHandlers[StatusV1]{})
		require.NoError(t, err)
		t.Cleanup(inf.Stop)
		olds = append(olds, inf)
	}
	current, err := framework.Watch[StatusV2](ctx, frameworktest.NewClient(t, v2, cfg), "Nodes", framework.InformerHandlers[StatusV2]{})
	require.NoError(t, err)
	t.Cleanup(current.Stop)

	require.NoError(t, nodes.Set(ready("n1")))
	require.NoError(t, nodes.Set(&StatusV2{Node: "n2", Conditions: []Condition{{Type: "Ready", Status: "False"}}}))
	require.NoError(t, nodes.Set(&StatusV2{Node: "n1", Conditions: []Condition{{Type: "Ready", Status: "False"}}}))
	require.NoError(t, nodes.Delete("n2"))

	converged := func() bool {
		for _, inf := range olds {
			n1, ok := inf.Get("n1")
			if !ok || n1.Ready || inf.Len() != 1 {
				return false
			}
		}
		n1, ok := current.Get("n1")
		return ok && len(n1.Conditions) == 1 && n1.Conditions[0].Status == "False" && current.Len() == 1
	}
	require.Eventually(t, converged, 15*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(3), conversions.Load(), "one conversion per change, whatever the number of watchers")

	// The status page lists both forms of the topic with their watchers.
	topics := srv.Server.Status().Topics
	require.Len(t, topics, 2)
	watchers := map[string]int{}
	for _, tp := range topics {
		assert.Equal(t, "Nodes", tp.Topic)
		assert.Equal(t, 1, tp.Keys)
		watchers[tp.Version] = len(tp.Watchers)
	}
	assert.Equal(t, map[string]int{"1.0.0": oldWatchers, "2.0.0": 1}, watchers)

	// The 1.0.0 watchers received the 1.0.0 form on the wire.
	raw, _ := json.Marshal(mustGet(t, olds[0], "n1"))
	assert.JSONEq(t, `{"node":"n1","ready":false}`, string(raw))
}

func mustGet[T any](t *testing.T, inf *framework.Informer[T], key string) *T {
	t.Helper()
	v, ok := inf.Get(key)
	require.True(t, ok)
	return v
}

// registerNodeinfoV2Fork registers nodeinfo's 2.0.0 handlers and the 1.0.0
// methods forked to them, as a generated RegisterFork does, without the
// topics.
func registerNodeinfoV2Fork(s *framework.Server, v1, v2 *framework.Contract) {
	h := func(context.Context, *StatusV2) (*AckV2, error) { return &AckV2{Accepted: true}, nil }
	framework.HandleUnary(s, v2, "Report", h)
	framework.HandleUnary(s, v2, "Describe", h)
	framework.HandleBatch(s, v2, "ReportMany", h)
	framework.ForkUnary(s, v1, v2, "Report", statusV1ToV2, ackV2ToV1)
	framework.ForkBatch(s, v1, v2, "ReportMany", statusV1ToV2, ackV2ToV1)
	framework.HandleUnary(s, v1, "OnlyInOldV1", func(context.Context, *StatusV1) (*AckV1, error) { return &AckV1{}, nil })
}

// Start refuses a server that leaves a declared topic unserved, naming it
// and its version, as it refuses a method without a handler: at 2.0.0,
// at a forked 1.0.0, and a fork whose current form is never served.
func TestStartRefusesAnUnservedTopic(t *testing.T) {
	v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
	cases := []struct {
		name     string
		register func(s *framework.Server)
		want     []string // what the error says
	}{
		{"the current version's topic", func(s *framework.Server) {
			h := func(context.Context, *StatusV2) (*AckV2, error) { return &AckV2{}, nil }
			framework.HandleUnary(s, v2, "Report", h)
			framework.HandleUnary(s, v2, "Describe", h)
			framework.HandleBatch(s, v2, "ReportMany", h)
		}, []string{"nodeinfo 2.0.0: topic Nodes is not served: serve it with ServeTopic"}},
		{"a forked version's topic", func(s *framework.Server) {
			registerNodeinfoV2Fork(s, v1, v2)
			framework.ServeTopic[StatusV2](s, v2, "Nodes")
		}, []string{"nodeinfo 1.0.0: topic Nodes is not served", "RegisterFork"}},
		{"a fork whose current form is not served", func(s *framework.Server) {
			registerNodeinfoV2Fork(s, v1, v2)
			framework.ForkServedTopic(s, v1, v2, "Nodes", statusV2ToV1)
		}, []string{"nodeinfo 1.0.0: topic Nodes is forked from 2.0.0, which does not serve it", "nodeinfo 2.0.0: topic Nodes is not served"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: frameworktest.Quiet()})
			require.NoError(t, err)
			tc.register(s)
			err = s.Start()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// ForkServedTopic serves the 1.0.0 form of a topic from the 2.0.0 writer
// whether the writer is made before or after it, with what was written
// before the fork converted too; 1.0.0 watchers over HTTP see the 1.0.0
// form, and a writer of another type is a setup mistake.
func TestForkServedTopicServesTheEarlierFormFromTheWriter(t *testing.T) {
	v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
	for _, writerFirst := range []bool{true, false} {
		name := "fork first"
		if writerFirst {
			name = "writer first"
		}
		t.Run(name, func(t *testing.T) {
			var nodes *framework.TopicWriter[StatusV2]
			srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0"}, func(s *framework.Server) {
				registerNodeinfoV2Fork(s, v1, v2)
				if writerFirst {
					nodes = framework.ServeTopic[StatusV2](s, v2, "Nodes", framework.WithMaxKeys(2))
					require.NoError(t, nodes.Set(ready("before")))
					framework.ForkServedTopic(s, v1, v2, "Nodes", statusV2ToV1)
				} else {
					framework.ForkServedTopic(s, v1, v2, "Nodes", statusV2ToV1)
					nodes = framework.ServeTopic[StatusV2](s, v2, "Nodes", framework.WithMaxKeys(2))
					require.NoError(t, nodes.Set(ready("before")))
				}
			})
			require.NoError(t, nodes.Set(&StatusV2{Node: "after", Conditions: []Condition{{Type: "Ready", Status: "False"}}}))
			ctx := timeout(t, 20*time.Second)
			old, err := framework.Watch[StatusV1](ctx, frameworktest.NewClient(t, v1,
				framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}}), "Nodes", framework.InformerHandlers[StatusV1]{})
			require.NoError(t, err)
			t.Cleanup(old.Stop)
			require.NoError(t, old.WaitForSync(ctx))
			assert.Equal(t, &StatusV1{Node: "before", Ready: true}, mustGet(t, old, "before"))
			assert.Equal(t, &StatusV1{Node: "after", Ready: false}, mustGet(t, old, "after"))
			// The earlier form takes the current form's limits.
			err = nodes.Set(ready("third"))
			assert.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err))
		})
	}

	s, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	framework.ForkServedTopic(s, v1, v2, "Nodes", statusV2ToV1)
	assert.PanicsWithValue(t, "lockstep: topic Nodes of nodeinfo 2.0.0 is served as *framework.TopicWriter[encoding/json.RawMessage], but its fork to 1.0.0 converts *framework_test.StatusV2",
		func() { framework.ServeTopic[json.RawMessage](s, v2, "Nodes") })
}
