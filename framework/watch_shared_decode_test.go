package framework_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
)

// startNodeStatusTopic starts a server that writes a NodeStatus topic of
// a contract called name (benchgen's messages, no methods), and returns
// the contract, the topic's writer and the server. Its sessions live 30s
// without a heartbeat (and a silent stream is given up after twice that),
// so that a starved test process on a loaded machine keeps its one stream:
// what these tests count (copies, decodes) changes with every new stream.
func startNodeStatusTopic(t *testing.T, name string) (*framework.Contract, *framework.TopicWriter[benchgen.NodeStatus], *frameworktest.Running) {
	m := benchgen.Contract.Model()
	m.Name = name
	m.Methods = map[string]handshake.Method{}
	m.Topics = map[string]handshake.Topic{
		"NodeStatus": {Object: "NodeStatus", Key: "nodeName", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
	}
	contract := framework.MustContract(m)
	var writer *framework.TopicWriter[benchgen.NodeStatus]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: 30 * time.Second}, func(s *framework.Server) {
		writer = framework.ServeTopic[benchgen.NodeStatus](s, contract, "NodeStatus")
	})
	return contract, writer, srv
}

// TestInformerObjectsKeepTheirStringsAcrossFrames guards the shared
// decode: the informers of a feed decode generated messages without
// copying the frame, so the objects' strings are slices of the frames
// the feed read. That is only sound while no frame's bytes are ever
// written again (the feed reads each into a buffer of its own). Two
// informers sharing one feed see many changes, each with strings of its
// own, as large frames that the stream's read buffer must be reused for;
// every object either was handed keeps, at the end, exactly the strings
// it had when it was handed over.
func TestInformerObjectsKeepTheirStringsAcrossFrames(t *testing.T) {
	contract, writer, srv := startNodeStatusTopic(t, "sharedecode")
	node := func(n, gen int) *benchgen.NodeStatus {
		name := fmt.Sprintf("node-%03d", n)
		return &benchgen.NodeStatus{
			NodeName:   name,
			Conditions: []benchgen.NodeCondition{{Type: benchgen.NodeConditionTypeReady, Status: benchgen.NodeConditionStatusTrue}},
			Capacity:   benchgen.ResourceList{"cpu": fmt.Sprint(gen)}, Allocatable: benchgen.ResourceList{},
			Addresses: []benchgen.NodeAddress{{Type: benchgen.NodeAddressTypeHostname, Address: name}},
			Images:    []string{fmt.Sprintf("image-%d-%d-%s", n, gen, strings.Repeat("x", 4000))},
		}
	}
	const keys, gens = 4, 30
	for n := range keys {
		require.NoError(t, writer.Set(node(n, 0)))
	}
	cl := frameworktest.NewClient(t, contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}})
	ctx := timeout(t, 20*time.Second)

	type handed struct {
		obj            *benchgen.NodeStatus
		image, cpu, at string
	}
	var mu sync.Mutex
	var seen []handed
	record := func(key string, obj *benchgen.NodeStatus) {
		mu.Lock()
		defer mu.Unlock()
		// Copies of what the object holds now, to compare with later.
		seen = append(seen, handed{obj, strings.Clone(obj.Images[0]), strings.Clone(obj.Capacity["cpu"]), strings.Clone(key)})
	}
	h := framework.InformerHandlers[benchgen.NodeStatus]{OnAdd: record, OnUpdate: func(key string, _, obj *benchgen.NodeStatus) { record(key, obj) }}
	a, err := framework.Watch(ctx, cl, "NodeStatus", h)
	require.NoError(t, err)
	defer a.Stop()
	b, err := framework.Watch(ctx, cl, "NodeStatus", h)
	require.NoError(t, err)
	defer b.Stop()
	require.NoError(t, framework.WaitForCacheSync(ctx, a, b))
	for gen := 1; gen <= gens; gen++ {
		for n := range keys {
			require.NoError(t, writer.Set(node(n, gen)))
		}
	}
	last := func(inf *framework.Informer[benchgen.NodeStatus]) bool {
		for n := range keys {
			o, ok := inf.Get(fmt.Sprintf("node-%03d", n))
			if !ok || o.Capacity["cpu"] != fmt.Sprint(gens) {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool { return last(a) && last(b) }, 15*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(1), a.Stats().Streams, "the two informers share one stream")

	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(seen), 2*keys, "every informer was handed every key")
	for _, s := range seen {
		assert.Equal(t, s.image, s.obj.Images[0], "an object's string changed after it was handed over")
		assert.Equal(t, s.cpu, s.obj.Capacity["cpu"])
		assert.Equal(t, s.at, s.obj.NodeName)
	}
}

// nodeOfGeneration is node n's status, its capacity naming gen.
func nodeOfGeneration(n, gen int) *benchgen.NodeStatus {
	reason, at := "KubeletReady", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	name := fmt.Sprintf("node-%03d", n)
	return &benchgen.NodeStatus{
		NodeName: name,
		Conditions: []benchgen.NodeCondition{{Type: benchgen.NodeConditionTypeReady, Status: benchgen.NodeConditionStatusTrue,
			Reason: &reason, LastHeartbeatTime: &at}},
		Capacity: benchgen.ResourceList{"cpu": fmt.Sprint(gen)}, Allocatable: benchgen.ResourceList{"cpu": "1"},
		Addresses: []benchgen.NodeAddress{{Type: benchgen.NodeAddressTypeHostname, Address: name}},
		Images:    []string{"image"},
	}
}

// startNodeStatusKeys starts a NodeStatus topic holding keys objects at
// generation 0, and a client of its server.
func startNodeStatusKeys(t *testing.T, name string, keys int) (*framework.TopicWriter[benchgen.NodeStatus], *framework.Client) {
	t.Helper()
	contract, writer, srv := startNodeStatusTopic(t, name)
	for n := range keys {
		require.NoError(t, writer.Set(nodeOfGeneration(n, 0)))
	}
	return writer, frameworktest.NewClient(t, contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}})
}

// TestFeedDecodesOnceAndEachInformerHoldsACopy: two informers of one feed
// watching a generated message (which has DeepCopy) take every object as
// a copy of the feed's one decode, and with DecodeEach decode it
// themselves; either way each holds objects of its own, equal to the
// other's and sharing no slice, map or pointer with them, so modifying
// one informer's object leaves the other's as it was.
func TestFeedDecodesOnceAndEachInformerHoldsACopy(t *testing.T) {
	for _, each := range []bool{false, true} {
		t.Run(fmt.Sprintf("DecodeEach=%v", each), func(t *testing.T) {
			const keys = 3
			node := nodeOfGeneration
			writer, cl := startNodeStatusKeys(t, "decodeonce", keys)
			ctx := timeout(t, 20*time.Second)
			var opts []framework.WatchOption
			if each {
				opts = append(opts, framework.DecodeEach())
			}
			a, err := framework.Watch(ctx, cl, "NodeStatus", framework.InformerHandlers[benchgen.NodeStatus]{}, opts...)
			require.NoError(t, err)
			defer a.Stop()
			b, err := framework.Watch(ctx, cl, "NodeStatus", framework.InformerHandlers[benchgen.NodeStatus]{}, opts...)
			require.NoError(t, err)
			defer b.Stop()
			require.NoError(t, framework.WaitForCacheSync(ctx, a, b))
			for n := range keys {
				require.NoError(t, writer.Set(node(n, 1)))
			}
			updated := func(inf *framework.Informer[benchgen.NodeStatus]) bool {
				for n := range keys {
					if o, ok := inf.Get(fmt.Sprintf("node-%03d", n)); !ok || o.Capacity["cpu"] != "1" {
						return false
					}
				}
				return true
			}
			require.Eventually(t, func() bool { return updated(a) && updated(b) }, 15*time.Second, 5*time.Millisecond)

			for n := range keys {
				key := fmt.Sprintf("node-%03d", n)
				oa, _ := a.Get(key)
				ob, _ := b.Get(key)
				require.Equal(t, node(n, 1), oa)
				require.Equal(t, oa, ob)
				assert.NotSame(t, oa, ob)
				assert.NotSame(t, oa.Conditions[0].Reason, ob.Conditions[0].Reason)
				assert.NotSame(t, oa.Conditions[0].LastHeartbeatTime, ob.Conditions[0].LastHeartbeatTime)
				assert.NotSame(t, &oa.Conditions[0], &ob.Conditions[0])
				assert.NotSame(t, &oa.Images[0], &ob.Images[0])
				assert.NotSame(t, &oa.Addresses[0], &ob.Addresses[0])
				oa.Capacity["cpu"] = "changed by a"
				assert.Equal(t, "1", ob.Capacity["cpu"], "the informers share a map")
			}
			// Each informer took the updated objects (and the initial ones,
			// unless the feed synced before b subscribed: then a, alone on
			// it, kept the feed's decode, and b decoded the snapshot itself).
			for _, inf := range []*framework.Informer[benchgen.NodeStatus]{a, b} {
				if each {
					assert.Zero(t, inf.Stats().Copied, "with DecodeEach every informer decodes")
				} else {
					assert.GreaterOrEqual(t, inf.Stats().Copied, int64(keys), "every update is a copy of the feed's decode")
					assert.LessOrEqual(t, inf.Stats().Copied, int64(2*keys))
				}
			}
		})
	}
}

// TestSoleInformerKeepsItsFeedsDecode: an informer alone on its feed
// takes the feed's one decode of each frame as its own, without a deep
// copy; a second informer that joins the feed later decodes the frames
// the first one took itself, so the two still share no object, and both
// copy from then on.
func TestSoleInformerKeepsItsFeedsDecode(t *testing.T) {
	const keys = 3
	node := nodeOfGeneration
	writer, cl := startNodeStatusKeys(t, "sole", keys)
	ctx := timeout(t, 20*time.Second)
	a, err := framework.Watch(ctx, cl, "NodeStatus", framework.InformerHandlers[benchgen.NodeStatus]{})
	require.NoError(t, err)
	defer a.Stop()
	require.NoError(t, a.WaitForSync(ctx))
	holds := func(inf *framework.Informer[benchgen.NodeStatus], gen int) func() bool {
		return func() bool {
			for n := range keys {
				if o, ok := inf.Get(fmt.Sprintf("node-%03d", n)); !ok || o.Capacity["cpu"] != fmt.Sprint(gen) {
					return false
				}
			}
			return true
		}
	}
	for n := range keys {
		require.NoError(t, writer.Set(node(n, 1)))
	}
	require.Eventually(t, holds(a, 1), 15*time.Second, 5*time.Millisecond)
	assert.Zero(t, a.Stats().Copied, "an informer alone on its feed keeps the feed's decode: %+v", a.Stats())

	b, err := framework.Watch(ctx, cl, "NodeStatus", framework.InformerHandlers[benchgen.NodeStatus]{})
	require.NoError(t, err)
	defer b.Stop()
	require.NoError(t, b.WaitForSync(ctx))
	assert.Zero(t, b.Stats().Copied, "the frames a took are decoded by b itself: %+v", b.Stats())
	for n := range keys {
		key := fmt.Sprintf("node-%03d", n)
		oa, _ := a.Get(key)
		ob, _ := b.Get(key)
		require.Equal(t, oa, ob)
		assert.NotSame(t, oa, ob)
	}
	for n := range keys {
		require.NoError(t, writer.Set(node(n, 2)))
	}
	require.Eventually(t, func() bool { return holds(a, 2)() && holds(b, 2)() }, 15*time.Second, 5*time.Millisecond)
	for n := range keys {
		key := fmt.Sprintf("node-%03d", n)
		oa, _ := a.Get(key)
		ob, _ := b.Get(key)
		assert.NotSame(t, oa, ob)
		oa.Capacity["cpu"] = "changed by a"
		assert.Equal(t, "2", ob.Capacity["cpu"], "the informers share a map")
	}
	assert.Equal(t, int64(keys), a.Stats().Copied, "with two informers on the feed, each copies: %+v", a.Stats())
	assert.Equal(t, int64(keys), b.Stats().Copied, "%+v", b.Stats())
}
