package upgradesim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/upgradesim"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Pod is the object of the grid contract's Pods topic, selectable by
// node, as a kubelet watches only its own node's pods.
type Pod struct {
	UID  string `json:"uid"`
	Node string `json:"node"`
	Gen  int64  `json:"gen"`
}

// gridContract has one method, Place, whose handler writes the pod it
// places into the Pods topic, on node-a or node-b in turn.
var gridContract = framework.MustContract(handshake.Contract{
	Name: "grid", Version: "1.0.0", Server: "controller", Client: "agent",
	Methods: map[string]handshake.Method{"Place": {Request: "Pod", Response: "Pod"}},
	Topics: map[string]handshake.Topic{"Pods": {Object: "Pod", Key: "uid", Writer: handshake.RoleServer,
		LostWriter: handshake.LostWriterDelete, Selectors: []string{"node"}}},
	Schemas: map[string]json.RawMessage{"Pod": json.RawMessage(`{"type":"object","required":["uid","node","gen"],
		"properties":{"uid":{"type":"string"},"node":{"type":"string"},"gen":{"type":"integer"}}}`)},
})

// gridWorld is a controller holding Pods and an agent that watches the
// pods of one node with a selection. watches is the node the agent's
// informer selects; declares is the selection it declares to the kit
// (nil: none).
type gridWorld struct {
	watches  string
	declares upgradesim.Selection
}

func (g gridWorld) config() upgradesim.Config {
	controller := func(env *upgradesim.Env) (*upgradesim.Instance, error) {
		srv, err := framework.NewServer(env.ServerConfig(framework.ServerConfig{Release: "1.31.0", SessionTTL: time.Second,
			Heartbeat: 50 * time.Millisecond, DrainTimeout: 500 * time.Millisecond}))
		if err != nil {
			return nil, err
		}
		pods := framework.ServeTopic[Pod](srv, gridContract, "Pods")
		framework.HandleUnary(srv, gridContract, "Place", func(ctx context.Context, p *Pod) (*Pod, error) {
			// Ten pods, placed on node-a and node-b in turn, each placed
			// again and again with its generation growing.
			n, _ := strconv.Atoi(strings.TrimPrefix(upgradesim.CallID(ctx), "c"))
			placed := &Pod{UID: "pod-" + strconv.Itoa(n%10), Node: []string{"node-a", "node-b"}[n%2], Gen: int64(n)}
			if err := pods.Set(placed); err != nil {
				return nil, err
			}
			env.Apply(ctx)
			return placed, nil
		})
		return &upgradesim.Instance{Server: srv, Topics: map[string]upgradesim.TopicState{"Pods": upgradesim.ViewState(pods.TopicView)}}, nil
	}
	agent := func(env *upgradesim.Env) (*upgradesim.Instance, error) {
		cl, err := framework.NewClient(gridContract, env.ClientConfig("controller", framework.ClientConfig{Release: "1.31.0"}))
		if err != nil {
			return nil, err
		}
		inf, err := framework.Watch[Pod](env.Context(), cl, "Pods", framework.InformerHandlers[Pod]{}, framework.Select("node", g.watches))
		if err != nil {
			return nil, err
		}
		inst := &upgradesim.Instance{Clients: map[string]*framework.Client{"controller": cl},
			Topics: map[string]upgradesim.TopicState{"Pods": upgradesim.InformerState(inf)},
			Close:  func() error { inf.Stop(); return nil }}
		if g.declares != nil {
			inst.Selections = map[string]upgradesim.Selection{"Pods": g.declares}
		}
		return inst, nil
	}
	speaks := map[string][]string{"grid": {"1.0.0"}}
	return upgradesim.Config{
		Components: []upgradesim.Component{
			{Name: "controller", Versions: []upgradesim.Version{{Name: "v1", Speaks: speaks, Start: controller}}},
			{Name: "agent", Versions: []upgradesim.Version{{Name: "v1", Speaks: speaks, Start: agent}}},
		},
		Traffic: []upgradesim.Traffic{{From: "agent", To: "controller", Rate: 40, Timeout: 10 * time.Second,
			Call: func(ctx context.Context, c *framework.Client) error {
				_, err := framework.CallUnary[Pod, Pod](ctx, c, "Place", &Pod{UID: "any", Node: "any"})
				return err
			}}},
		Watches:      []upgradesim.Watch{{Topic: "Pods", Watcher: "agent", Holder: "controller"}},
		BlockedBound: 300 * time.Millisecond,
	}
}

const gridPlan = `
start controller at v1
start agent at v1
wait until connected within 10s
wait until 20 calls acknowledged within 10s
restart controller
wait until 40 calls acknowledged within 10s`

func runGrid(t *testing.T, g gridWorld) *upgradesim.Report {
	t.Helper()
	sim, err := upgradesim.New(g.config())
	require.NoError(t, err)
	plan, err := upgradesim.ParsePlan("grid", 0, gridPlan)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := sim.Execute(ctx, plan)
	require.NoError(t, err)
	return rep
}

// A watcher that declares the selection it watches with converges to the
// holder's matching share, across a restart of the holder: the kit
// compares it with the pods of node-a, not the whole topic.
func TestSelectedWatcherConvergesToItsShare(t *testing.T) {
	t.Parallel()
	rep := runGrid(t, gridWorld{watches: "node-a", declares: upgradesim.Selection{"node": "node-a"}})
	for _, v := range rep.Violations {
		t.Error(v)
	}
	assert.Contains(t, rep.Summary(), "verdict: ok")
}

// The kit catches a selected watcher that does not converge to its
// share: one whose informer watches another node's pods than it declares
// (a watcher selecting the wrong share), and one that selects without
// declaring it, compared with the whole topic.
func TestSelectedWatcherThatMissesItsShareIsCaught(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		world gridWorld
		want  []string // parts of the violation's message
	}{
		{"watches another share than it declares", gridWorld{watches: "node-b", declares: upgradesim.Selection{"node": "node-a"}},
			[]string{"agent's view of Pods selected by node=node-a (5 objects) matches no controller replica: controller: holds 5, extra pod-1"}},
		{"selects without declaring it", gridWorld{watches: "node-a"},
			[]string{"agent's view of Pods (5 objects) matches no controller replica: controller: holds 10, missing pod-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := runGrid(t, tc.world)
			var found []string
			for _, v := range rep.Violations {
				if v.Invariant == upgradesim.InvariantWatchersConverge {
					found = append(found, fmt.Sprint(v))
				}
			}
			require.NotEmpty(t, found, "violations: %v", rep.Violations)
			for _, part := range tc.want {
				assert.Contains(t, found[0], part)
			}
			assert.Contains(t, rep.Summary(), "verdict: violated "+upgradesim.InvariantWatchersConverge)
		})
	}
}
