package framework_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
)

// nodesForkV1 is forkV1 with the Nodes topic converted up (withNodesTopic);
// ups counts the objects it converted.
func nodesForkV1(v1 *framework.Contract, ups *atomic.Int64) framework.Fork {
	f := forkV1
	f.Contract = v1
	f.Topics = map[string]framework.TopicConversion{"Nodes": framework.ConvertTopic(func(in *StatusV1) (*StatusV2, error) {
		ups.Add(1)
		return statusV1ToV2(in)
	})}
	return f
}

// startNodesV1 starts a 1.0.0 node controller over TLS on 127.0.0.1 that
// holds the Nodes topic in its 1.0.0 form, and returns its writer.
func startNodesV1(t *testing.T, v1 *framework.Contract, tlsCfg *frameworktest.TLS) (*frameworktest.Running, *framework.TopicWriter[StatusV1]) {
	t.Helper()
	var nodes *framework.TopicWriter[StatusV1]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.30.0", TLSConfig: tlsCfg.Server},
		func(s *framework.Server) {
			h := func(context.Context, *StatusV1) (*AckV1, error) { return &AckV1{OK: true}, nil }
			framework.HandleUnary(s, v1, "Report", h)
			framework.HandleUnary(s, v1, "OnlyInOldV1", h)
			framework.HandleBatch(s, v1, "ReportMany", h)
			nodes = framework.ServeTopic[StatusV1](s, v1, "Nodes")
		})
	return srv, nodes
}

// A 2.0.0 client in fork mode watches a 1.0.0 server's topic: its
// informer syncs, holding every object converted up, once per change
// however many informers share the client, and follows changes and
// deletes after the snapshot. Calls of the same client still travel at
// 1.0.0.
func TestForkClientWatchesOldServersTopicConvertedUp(t *testing.T) {
	v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
	tlsCfg := frameworktest.NewTLS(t, "kubelet")
	srv, nodes := startNodesV1(t, v1, tlsCfg)
	require.NoError(t, nodes.Set(&StatusV1{Node: "n1", Ready: true}))
	require.NoError(t, nodes.Set(&StatusV1{Node: "n2", Ready: false}))

	var ups atomic.Int64
	cl := frameworktest.NewClient(t, v2, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{srv.URL}, TLSConfig: tlsCfg.Client, Fork: []framework.Fork{nodesForkV1(v1, &ups)}})
	ctx := timeout(t, 20*time.Second)
	var infs []*framework.Informer[StatusV2]
	for range 2 {
		inf, err := framework.Watch[StatusV2](ctx, cl, "Nodes", framework.InformerHandlers[StatusV2]{})
		require.NoError(t, err)
		t.Cleanup(inf.Stop)
		infs = append(infs, inf)
	}
	for _, inf := range infs {
		require.NoError(t, inf.WaitForSync(ctx))
		assert.Equal(t, &StatusV2{Node: "n1", Conditions: []Condition{{Type: "Ready", Status: "True"}}}, mustGet(t, inf, "n1"))
		assert.Equal(t, &StatusV2{Node: "n2", Conditions: []Condition{{Type: "Ready", Status: "False"}}}, mustGet(t, inf, "n2"))
	}

	// Changes after the snapshot are converted too.
	require.NoError(t, nodes.Set(&StatusV1{Node: "n2", Ready: true}))
	require.NoError(t, nodes.Delete("n1"))
	for _, inf := range infs {
		require.Eventually(t, func() bool {
			n2, ok := inf.Get("n2")
			return ok && inf.Len() == 1 && n2.Conditions[0].Status == "True"
		}, 15*time.Second, 5*time.Millisecond)
	}
	assert.Equal(t, int64(3), ups.Load(), "each object read is converted once for the client, not once per informer")

	// The server served the watch at 1.0.0, the only version it holds.
	topics := srv.Server.Status().Topics
	require.Len(t, topics, 1)
	assert.Equal(t, "1.0.0", topics[0].Version)
	assert.Len(t, topics[0].Watchers, 1, "the client's informers share one stream")

	a, err := framework.CallUnary[StatusV2, AckV2](ctx, cl, "Report", ready("n3"))
	require.NoError(t, err)
	assert.True(t, a.Accepted)
}

// A client at 2.0.0 in fork mode watches each server in the server's
// version: a 1.0.0 one converted up, the 2.0.0 one that replaces it in
// its own form; either way its informer holds 2.0.0 objects.
func TestForkClientWatchesEachServerInItsOwnVersion(t *testing.T) {
	v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
	tlsCfg := frameworktest.NewTLS(t, "kubelet")
	old, oldNodes := startNodesV1(t, v1, tlsCfg)
	require.NoError(t, oldNodes.Set(&StatusV1{Node: "n1", Ready: false}))

	var ups atomic.Int64
	cl := frameworktest.NewClient(t, v2, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{old.URL}, TLSConfig: tlsCfg.Client, Fork: []framework.Fork{nodesForkV1(v1, &ups)}})
	ctx := timeout(t, 20*time.Second)
	inf, err := framework.Watch[StatusV2](ctx, cl, "Nodes", framework.InformerHandlers[StatusV2]{})
	require.NoError(t, err)
	t.Cleanup(inf.Stop)
	require.NoError(t, inf.WaitForSync(ctx))
	assert.Equal(t, "False", mustGet(t, inf, "n1").Conditions[0].Status)

	// The 1.0.0 server is upgraded in place to 2.0.0: the informer
	// watches the 2.0.0 form, with nothing to convert.
	converted := ups.Load()
	require.NoError(t, old.Stop())
	var nodes *framework.TopicWriter[StatusV2]
	frameworktest.StartServerAt(t, old.Addr, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", TLSConfig: tlsCfg.Server},
		func(s *framework.Server) {
			h := func(context.Context, *StatusV2) (*AckV2, error) { return &AckV2{Accepted: true}, nil }
			framework.HandleUnary(s, v2, "Report", h)
			framework.HandleUnary(s, v2, "Describe", h)
			framework.HandleBatch(s, v2, "ReportMany", h)
			nodes = framework.ServeTopic[StatusV2](s, v2, "Nodes")
		})
	require.NoError(t, nodes.Set(&StatusV2{Node: "n1", Conditions: []Condition{{Type: "Ready", Status: "Unknown"}}}))
	require.Eventually(t, func() bool {
		n1, ok := inf.Get("n1")
		return ok && n1.Conditions[0].Status == "Unknown"
	}, 15*time.Second, 5*time.Millisecond, "the informer follows the 2.0.0 replica")
	assert.Equal(t, converted, ups.Load(), "a 2.0.0 stream is not converted")
}

// A fork that leaves a topic both versions declare unconverted is refused
// when the client is made, naming the topic, as a method is; so is one
// converting a topic the earlier version lacks.
func TestForkWithoutTopicConversionIsRefused(t *testing.T) {
	v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
	cfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{"http://127.0.0.1:1"}}

	f := forkV1
	f.Contract = v1
	cfg.Fork = []framework.Fork{f}
	_, err := framework.NewClient(v2, cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fork 1.0.0 has no conversion for topic Nodes")

	var ups atomic.Int64
	cfg.Fork = []framework.Fork{nodesForkV1(nodeinfoV1, &ups)}
	_, err = framework.NewClient(v2, cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fork 1.0.0 converts topic Nodes, which both versions do not declare")
}

// A watch of a topic that 2.0.0 added, by a 2.0.0 client in fork mode
// whose only server is at 1.0.0, finds no server of its form: the
// session is ready for calls, so the blocked log says which version it
// agreed and that the topic does not exist there.
func TestForkWatchWithNoServerOfItsFormIsLogged(t *testing.T) {
	v1 := withNodesTopic(t, nodeinfoV1)
	m := withNodesTopic(t, nodeinfoV2).Model()
	m.Topics["Pods"] = handshake.Topic{Object: "Status", Key: "node", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete}
	v2, err := framework.NewContract(m)
	require.NoError(t, err)
	tlsCfg := frameworktest.NewTLS(t, "kubelet")
	srv, _ := startNodesV1(t, v1, tlsCfg)

	clock := clockwork.NewFakeClock()
	logs := &logLines{}
	var ups atomic.Int64
	cl := frameworktest.NewClient(t, v2, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{srv.URL}, TLSConfig: tlsCfg.Client, Fork: []framework.Fork{nodesForkV1(v1, &ups)},
		Clock: clock, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	endpointStateEventually(t, cl, srv.URL, "ready")
	inf, err := framework.Watch[StatusV2](context.Background(), cl, "Pods", framework.InformerHandlers[StatusV2]{})
	require.NoError(t, err)
	defer inf.Stop()
	const waiting = `waiting="watch Pods"`
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		return len(logs.matching(waiting)) > 0
	}, 10*time.Second, 5*time.Millisecond)
	line := logs.matching(waiting)[0]
	assert.Contains(t, line, `msg="lockstep: waiting for a compatible peer"`)
	assert.Contains(t, line, srv.URL+` agreed 1.0.0: 1.0.0 declares no topic Pods`)
	assert.False(t, inf.HasSynced())

	// Rate-limited: nothing more for 30 s, one line at 30 s.
	clock.Advance(29 * time.Second)
	assert.Len(t, logs.matching(waiting), 1)
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		return len(logs.matching(waiting)) == 2
	}, 10*time.Second, 5*time.Millisecond)
}

// A frame whose object the fork's conversion refuses is counted, logged
// and skipped; the others are converted and held.
func TestForkWatchSkipsAnObjectItCannotConvert(t *testing.T) {
	v1, v2 := withNodesTopic(t, nodeinfoV1), withNodesTopic(t, nodeinfoV2)
	tlsCfg := frameworktest.NewTLS(t, "kubelet")
	srv, nodes := startNodesV1(t, v1, tlsCfg)
	require.NoError(t, nodes.Set(&StatusV1{Node: "bad", Ready: true}))
	require.NoError(t, nodes.Set(&StatusV1{Node: "good", Ready: true}))

	f := forkV1
	f.Contract = v1
	f.Topics = map[string]framework.TopicConversion{"Nodes": framework.ConvertTopic(func(in *StatusV1) (*StatusV2, error) {
		if in.Node == "bad" {
			return nil, framework.Errorf(framework.CodeInvalidArgument, "node %s cannot be said at 2.0.0", in.Node)
		}
		return statusV1ToV2(in)
	})}
	logs := &logLines{}
	cl := frameworktest.NewClient(t, v2, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{srv.URL}, TLSConfig: tlsCfg.Client, Fork: []framework.Fork{f},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx := timeout(t, 20*time.Second)
	inf, err := framework.Watch[StatusV2](ctx, cl, "Nodes", framework.InformerHandlers[StatusV2]{})
	require.NoError(t, err)
	t.Cleanup(inf.Stop)
	require.NoError(t, inf.WaitForSync(ctx))
	assert.Equal(t, []string{"good"}, inf.Keys())
	line := logs.matching("watch frame does not convert")
	require.Len(t, line, 1)
	assert.Contains(t, line[0], `key=bad`)
	assert.Contains(t, line[0], `from=1.0.0 to=2.0.0`)
	assert.Contains(t, line[0], "node bad cannot be said at 2.0.0")
	raw, err := json.Marshal(mustGet(t, inf, "good"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"node":"good","conditions":[{"type":"Ready","status":"True"}]}`, string(raw))
}
