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
